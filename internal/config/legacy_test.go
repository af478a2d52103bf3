package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func parseLegacy(t *testing.T, args ...string) (*Legacy, error) {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var l Legacy
	l.Register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return &l, l.Finish()
}

func TestLegacyFlags(t *testing.T) {
	mapping := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(mapping, []byte("prefixes: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := parseLegacy(t, "--legacy-url", "http://old:5000/", "--legacy-mapping", mapping,
		"--legacy-include", "team/.*, new-.*", "--legacy-exclude", "team/vip/.*",
		"--legacy-migrate", "--legacy-storage-url", "file:///srv/registry", "--legacy-max-concurrency", "3")
	if err != nil {
		t.Fatal(err)
	}
	if l.URL != "http://old:5000" || !l.Enabled() || l.MaxConcurrency != 3 || l.RetryAfter != 30*time.Second {
		t.Fatalf("parsed %+v", l)
	}
	for path, want := range map[string]bool{
		"team/app": true, "new-x": true, "team/vip/db": false, "other/team/app": false, "legacy/x": false,
	} {
		if got := l.Local(path); got != want {
			t.Errorf("Local(%q) = %v, want %v", path, got, want)
		}
	}

	t.Setenv("ARTIFACT_REGISTRY_LEGACY_URL", "https://old.example")
	t.Setenv("ARTIFACT_REGISTRY_LEGACY_MAPPING", mapping)
	t.Setenv("ARTIFACT_REGISTRY_LEGACY_MAX_CONCURRENCY", "4")
	l, err = parseLegacy(t)
	if err != nil || l.URL != "https://old.example" || l.MaxConcurrency != 4 {
		t.Fatalf("from the environment: %+v %v", l, err)
	}
}

func TestLegacyFlagErrors(t *testing.T) {
	mapping := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(mapping, []byte("prefixes: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--legacy-migrate"}, "needs --legacy-url"},
		{[]string{"--legacy-url", "ftp://x"}, "must be an http(s) URL"},
		{[]string{"--legacy-url", "http://x"}, "needs --legacy-mapping"},
		{[]string{"--legacy-url", "http://x", "--legacy-mapping", "/no/such/file"}, "--legacy-mapping"},
		{[]string{"--legacy-url", "http://x", "--legacy-mapping", mapping, "--legacy-include", "team/("}, "--legacy-include"},
		{[]string{"--legacy-url", "http://x", "--legacy-mapping", mapping, "--legacy-username", "u"}, "go together"},
		{[]string{"--legacy-url", "http://x", "--legacy-mapping", mapping, "--legacy-max-concurrency", "0"}, "between 1 and 64"},
		{[]string{"--legacy-url", "http://x", "--legacy-mapping", mapping, "--legacy-max-concurrency", "65"}, "between 1 and 64"},
		{[]string{"--legacy-url", "http://x", "--legacy-mapping", mapping, "--legacy-retry-after", "10ms"}, "at least 1s"},
		{[]string{"--legacy-url", "http://x", "--legacy-mapping", mapping, "--legacy-migrate"}, "needs --legacy-storage-url"},
	} {
		_, err := parseLegacy(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
}

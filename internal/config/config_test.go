package config

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func parse(t *testing.T, args ...string) (*Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c Config
	c.Register(fs)
	if err := fs.Parse(append([]string{"--data-dir", t.TempDir()}, args...)); err != nil {
		return nil, err
	}
	return &c, c.Finish()
}

// The database pool always exceeds what the job workers can hold, so GC
// cleanups cannot starve requests; an explicit size that would is refused
// at startup with a message saying what is needed.
func TestPoolSizeExceedsJobWorkers(t *testing.T) {
	c, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	if c.GCCleanupWorkers != 10 {
		t.Fatalf("default cleanup workers %d", c.GCCleanupWorkers)
	}
	if got, min := c.PoolMaxConns(), int32(c.JobConns()+ForegroundConns); got != min || got <= int32(c.GCCleanupWorkers) {
		t.Fatalf("derived pool size %d, want %d (> %d cleanup workers)", got, min, c.GCCleanupWorkers)
	}
	c, err = parse(t, "--gc-cleanup-workers", "40")
	if err != nil {
		t.Fatal(err)
	}
	if c.PoolMaxConns() < 40+ForegroundConns {
		t.Fatalf("pool %d for 40 cleanup workers", c.PoolMaxConns())
	}
	c, err = parse(t, "--db-max-conns", "64")
	if err != nil || c.PoolMaxConns() != 64 {
		t.Fatalf("explicit size: %v %v", c, err)
	}
	t.Setenv("ARTIFACT_REGISTRY_DB_MAX_CONNS", "50")
	if c, err = parse(t); err != nil || c.PoolMaxConns() != 50 {
		t.Fatalf("size from the environment: %v %v", c, err)
	}
	for _, bad := range [][]string{
		{"--db-max-conns", "10"},
		{"--db-max-conns", "24"},
		{"--db-max-conns", "-1"},
		{"--gc-cleanup-workers", "0"},
		{"--gc-cleanup-workers", "30", "--db-max-conns", "40"},
	} {
		_, err := parse(t, bad...)
		if err == nil {
			t.Fatalf("%v accepted", bad)
		}
		if strings.Contains(bad[len(bad)-2], "db-max-conns") && bad[len(bad)-1] != "-1" && !strings.Contains(err.Error(), "use at least") {
			t.Fatalf("%v: unclear error %q", bad, err)
		}
	}
}

func TestMaxUploadSessionsPerRepository(t *testing.T) {
	c, err := parse(t)
	if err != nil || c.MaxUploadSessionsPerRepository != 1000 {
		t.Fatalf("default: %d %v, want 1000", c.MaxUploadSessionsPerRepository, err)
	}
	if c, err = parse(t, "--max-upload-sessions-per-repository", "0"); err != nil || c.MaxUploadSessionsPerRepository != 0 {
		t.Fatalf("0 (unlimited): %d %v", c.MaxUploadSessionsPerRepository, err)
	}
	t.Setenv("ARTIFACT_REGISTRY_MAX_UPLOAD_SESSIONS_PER_REPOSITORY", "25")
	if c, err = parse(t); err != nil || c.MaxUploadSessionsPerRepository != 25 {
		t.Fatalf("from the environment: %d %v", c.MaxUploadSessionsPerRepository, err)
	}
	if _, err = parse(t, "--max-upload-sessions-per-repository", "-1"); err == nil {
		t.Fatal("a negative cap was accepted")
	}
}

func TestGCCleanupRate(t *testing.T) {
	c, err := parse(t)
	if err != nil || c.GCCleanupRate != 600 {
		t.Fatalf("default: %d %v, want 600", c.GCCleanupRate, err)
	}
	if c, err = parse(t, "--gc-cleanup-rate", "0"); err != nil || c.GCCleanupRate != 0 {
		t.Fatalf("0 (no limit): %d %v", c.GCCleanupRate, err)
	}
	t.Setenv("ARTIFACT_REGISTRY_GC_CLEANUP_RATE", "2500")
	if c, err = parse(t); err != nil || c.GCCleanupRate != 2500 {
		t.Fatalf("from the environment: %d %v", c.GCCleanupRate, err)
	}
	if _, err = parse(t, "--gc-cleanup-rate", "-1"); err == nil {
		t.Fatal("a negative rate was accepted")
	}
}

// A short admin token is refused at start with a message that says what
// is needed and does not repeat the token; no admin token is fine.
func TestAdminTokenLength(t *testing.T) {
	short := "0123456789abcdefghijklmnopqrstu" // 31
	_, err := parse(t, "--admin-token", short)
	if err == nil || !strings.Contains(err.Error(), "at least 32") || strings.Contains(err.Error(), short) {
		t.Fatalf("31 characters: %v", err)
	}
	t.Setenv("ARTIFACT_REGISTRY_ADMIN_TOKEN", "changeme")
	if _, err := parse(t); err == nil || !strings.Contains(err.Error(), "ARTIFACT_REGISTRY_ADMIN_TOKEN") {
		t.Fatalf("short token from the environment: %v", err)
	}
	for _, ok := range []string{short + "v", ""} {
		if c, err := parse(t, "--admin-token", ok); err != nil || c.AdminToken != ok {
			t.Fatalf("%d characters: %v", len(ok), err)
		}
	}
}

func TestAuthFailureSettings(t *testing.T) {
	c, err := parse(t)
	if err != nil || c.AuthFailureLimit != 10 || len(c.TrustedProxies) != 0 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = parse(t, "--auth-failure-limit", "0", "--trusted-proxies", "10.0.0.0/8, 192.0.2.7 ,fd00::1/64")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range c.TrustedProxies {
		got = append(got, p.String())
	}
	if c.AuthFailureLimit != 0 || strings.Join(got, " ") != "10.0.0.0/8 192.0.2.7/32 fd00::/64" {
		t.Fatalf("parsed %d %v", c.AuthFailureLimit, got)
	}
	for _, bad := range [][]string{{"--auth-failure-limit", "-1"}, {"--trusted-proxies", "10.0.0.0/8,proxy.internal"}} {
		if _, err := parse(t, bad...); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}
}

// --npm-max-publish-bytes: default, flag, environment, and a refusal of
// sizes too small for any publish.
func TestNpmMaxPublishBytes(t *testing.T) {
	c, err := parse(t)
	if err != nil || c.NpmMaxPublishBytes != DefaultNpmMaxPublishBytes {
		t.Fatalf("default: %v %v", c, err)
	}
	if c, err = parse(t, "--npm-max-publish-bytes", "1048576"); err != nil || c.NpmMaxPublishBytes != 1<<20 {
		t.Fatalf("flag: %v %v", c, err)
	}
	t.Setenv("ARTIFACT_REGISTRY_NPM_MAX_PUBLISH_BYTES", "2097152")
	if c, err = parse(t); err != nil || c.NpmMaxPublishBytes != 2<<20 {
		t.Fatalf("environment: %v %v", c, err)
	}
	if _, err := parse(t, "--npm-max-publish-bytes", "0"); err == nil || !strings.Contains(err.Error(), "npm-max-publish-bytes") {
		t.Fatalf("0 accepted: %v", err)
	}
}

func TestBodyIdleTimeout(t *testing.T) {
	c, err := parse(t)
	if err != nil || c.BodyIdleTimeout != 30*time.Second {
		t.Fatalf("default body idle timeout: %v %v", c, err)
	}
	t.Setenv("ARTIFACT_REGISTRY_BODY_IDLE_TIMEOUT", "2m")
	if c, err = parse(t); err != nil || c.BodyIdleTimeout != 2*time.Minute {
		t.Fatalf("from the environment: %v %v", c, err)
	}
	if c, err = parse(t, "--body-idle-timeout", "5s"); err != nil || c.BodyIdleTimeout != 5*time.Second {
		t.Fatalf("from the flag: %v %v", c, err)
	}
	if _, err := parse(t, "--body-idle-timeout", "0s"); err == nil || !strings.Contains(err.Error(), "--body-idle-timeout") {
		t.Fatalf("zero accepted: %v", err)
	}
}

// The root key settings: none by default (internal/rootkey decides), the
// environment, and the previous keys split on commas.
func TestRootKeySettings(t *testing.T) {
	c, err := parse(t)
	if err != nil || c.RootKeyURL != "" || len(c.PreviousRootKeyURLs) != 0 {
		t.Fatalf("defaults: %q %v %v", c.RootKeyURL, c.PreviousRootKeyURLs, err)
	}
	t.Setenv("ARTIFACT_REGISTRY_ROOT_KEY_URL", "awskms:///alias/new")
	t.Setenv("ARTIFACT_REGISTRY_PREVIOUS_ROOT_KEY_URLS", " awskms:///alias/old ,, hashivault://older ")
	c, err = parse(t)
	if err != nil || c.RootKeyURL != "awskms:///alias/new" || strings.Join(c.PreviousRootKeyURLs, " ") != "awskms:///alias/old hashivault://older" {
		t.Fatalf("from the environment: %q %v %v", c.RootKeyURL, c.PreviousRootKeyURLs, err)
	}
}

// --storage-redirect is off by default, taken from the environment, and
// refused at start on storage whose objects no client could be sent to.
func TestStorageRedirect(t *testing.T) {
	c, err := parse(t)
	if err != nil || c.StorageRedirect {
		t.Fatalf("default: %v %v", c.StorageRedirect, err)
	}
	if _, err := parse(t, "--storage-redirect", "--storage-url", "s3://bucket?region=us-east-1"); err != nil {
		t.Fatalf("s3: %v", err)
	}
	if _, err := parse(t, "--storage-redirect", "--storage-url", "gs://bucket"); err != nil {
		t.Fatalf("gs: %v", err)
	}
	for _, u := range []string{"", "file:///srv/blobs", "mem://", "azblob://container"} {
		args := []string{"--storage-redirect"}
		if u != "" {
			args = append(args, "--storage-url", u)
		}
		if _, err := parse(t, args...); err == nil || !strings.Contains(err.Error(), "--storage-redirect") || !strings.Contains(err.Error(), "s3:// or gs://") {
			t.Errorf("%q: %v, want a refusal naming the flag and what it needs", u, err)
		}
	}
	t.Setenv("ARTIFACT_REGISTRY_STORAGE_REDIRECT", "true")
	if _, err := parse(t); err == nil {
		t.Fatal("redirect from the environment on the default file storage was accepted")
	}
}

package rootkey

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/redact"
)

const testKey = "smGbjm71Nxd1Ig5FS0wj9SlbzAIrnolCz9bQQ6uAhl4="

// TestGeneratedKey: the first load generates an owner-only key file and
// says so; later loads reuse it; concurrent first loads agree on one key;
// a file others can read is refused.
func TestGeneratedKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx := context.Background()
	k, err := Load(ctx, Settings{DataDir: dir, Embedded: true})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if !k.Created || k.File != Path(dir) || k.Root == nil {
		t.Fatalf("first load: %+v", k)
	}
	st, err := os.Stat(Path(dir))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st.Mode(), err)
	}
	b, _ := os.ReadFile(Path(dir))
	if strings.Contains(k.Root.URI, strings.TrimSpace(string(b))) || !strings.HasPrefix(k.Root.URI, "base64key://sha256:") {
		t.Fatalf("the recorded URI %q holds the key", k.Root.URI)
	}
	ct, err := k.Root.Keeper.Encrypt(ctx, []byte("namespace key"))
	if err != nil {
		t.Fatal(err)
	}

	again, err := Load(ctx, Settings{DataDir: dir, Embedded: true})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.Created || again.Root.URI != k.Root.URI {
		t.Fatalf("second load: created %v, %s vs %s", again.Created, again.Root.URI, k.Root.URI)
	}
	if pt, err := again.Root.Keeper.Decrypt(ctx, ct); err != nil || string(pt) != "namespace key" {
		t.Fatalf("the reused key does not open what the first wrapped: %v", err)
	}

	race := filepath.Join(t.TempDir(), "race")
	urls := make([]string, 8)
	var wg sync.WaitGroup
	for i := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, _, err := LoadOrCreate(race)
			if err != nil {
				t.Error(err)
			}
			urls[i] = u
		}()
	}
	wg.Wait()
	for _, u := range urls {
		if u != urls[0] || u == "" {
			t.Fatal("concurrent first loads disagree on the key")
		}
	}

	if err := os.Chmod(Path(dir), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ctx, Settings{DataDir: dir, Embedded: true}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a world-readable key file: %v", err)
	}
}

// TestNoKeyOnExternalDatabase: without a URL on an external database no
// key is generated and none is configured.
func TestNoKeyOnExternalDatabase(t *testing.T) {
	dir := t.TempDir()
	k, err := Load(context.Background(), Settings{DataDir: dir})
	if err != nil || k.Root != nil || k.Created {
		t.Fatalf("external database without a key: %+v %v", k, err)
	}
	if _, err := os.Stat(Path(dir)); !os.IsNotExist(err) {
		t.Fatalf("a key file was written: %v", err)
	}
}

// TestURLs: a configured URL wins over the generated file; bad URLs are
// refused with messages that never quote the key; base64key URIs are
// fingerprints, other URIs lose their user information; the key is
// registered with the log redaction.
func TestURLs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	k, err := Load(ctx, Settings{URL: "base64key://" + testKey, Previous: []string{"base64key://" + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))},
		DataDir: dir, Embedded: true})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if k.Created || k.File != "" || len(k.Previous) != 1 || k.Previous[0].URI == k.Root.URI {
		t.Fatalf("configured keys: %+v", k)
	}
	if _, err := os.Stat(Path(dir)); !os.IsNotExist(err) {
		t.Fatal("a key file was generated although a URL is configured")
	}
	if got := redact.Text("url base64key://" + testKey); strings.Contains(got, testKey) {
		t.Fatalf("the key is not redacted: %s", got)
	}

	for raw, want := range map[string]string{
		"base64key://":                          "needs a key",
		"base64key://c2hvcnQ=":                  "32 bytes",
		"base64key://" + testKey + "?x=1":       "",
		"file:///etc/key":                       "not one of",
		"rot13://key":                           "not one of",
		"no scheme":                             "scheme://",
		"awskms:///" + strings.Repeat("a", 300): "at most 255",
	} {
		_, err := Open(ctx, raw)
		if err == nil || (want != "" && !strings.Contains(err.Error(), want)) || strings.Contains(err.Error(), testKey) {
			t.Errorf("%.40s: %v", raw, err)
		}
	}
	for raw, want := range map[string]string{
		"hashivault://user:s3cretpass@transit-key":                     "hashivault://transit-key",
		"awskms:///alias/registry?region=eu-west-1":                    "awskms:///alias/registry?region=eu-west-1",
		"gcpkms://projects/p/locations/global/keyRings/r/cryptoKeys/k": "gcpkms://projects/p/locations/global/keyRings/r/cryptoKeys/k",
	} {
		got, err := URI(raw)
		if err != nil || got != want {
			t.Errorf("URI(%s) = %s, %v", raw, got, err)
		}
	}
	if got := redact.Text("vault said s3cretpass"); strings.Contains(got, "s3cretpass") {
		t.Fatalf("a URL password is not redacted: %s", got)
	}
}

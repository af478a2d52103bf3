package proxy_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/legacy/inventory"
	"github.com/artifact-registry/artifact-registry/legacy/legacytest"
)

// TestTokenAuthEndToEnd: the legacy registry uses distribution's token
// auth. crane pulls and pushes through us with our credentials; we get
// tokens from the legacy registry's token service and the client never
// sees its challenge.
func TestTokenAuthEndToEnd(t *testing.T) {
	ctx := context.Background()
	ts := legacytest.StartTokenServer(t, "legacy-user", "legacy-secret")
	e := newEnvWith(t, ts)
	// crane refuses a token realm on a loopback address, so the test's own
	// direct access goes through a second, auth-less registry process on
	// the same storage (distribution keeps no cache unless configured).
	plain, _ := legacytest.StartRegistryVersion(t, legacytest.V3, e.legacyDir)
	app, legacyApp := e.host+"/team/app", plain+"/team/app"

	legacytest.PushImage(t, plain, "team/app", "v1", legacytest.Image{Layers: 2, Seed: 1, LayerSize: 1 << 20})
	if _, err := inventory.Run(ctx, e.st, e.bucket(), e.rules); err != nil {
		t.Fatal(err)
	}

	// Pull through us: manifest and blobs, byte-identical.
	if got, want := e.crane("digest", app+":v1"), e.crane("digest", legacyApp+":v1"); got != want {
		t.Fatalf("pull through proxy: %s, legacy %s", got, want)
	}
	e.crane("pull", app+":v1", filepath.Join(t.TempDir(), "v1.tar"))

	// Push through us: streamed blob uploads and a manifest PUT.
	v2 := e.push(app+":v2", "pushed through the proxy to a token-auth registry")
	if got := e.crane("digest", legacyApp+":v2"); got != v2 {
		t.Fatalf("push through proxy did not land in the legacy registry: %s vs %s", got, v2)
	}

	// Tokens were issued to us for pull and for pull,push on team/app, and
	// reused: far fewer tokens than requests.
	ours := ts.Issued()
	t.Logf("%d tokens issued to the proxy: %q", len(ours), ours)
	for _, want := range []string{"repository:team/app:pull", "repository:team/app:pull,push"} {
		if !slices.Contains(ours, want) {
			t.Fatalf("tokens issued to the proxy: %q, want one for %q", ours, want)
		}
	}

	// A client without credentials gets our challenge, not the legacy
	// registry's realm.
	resp, err := http.Get(e.url + "/v2/team/app/manifests/v1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if ch := resp.Header.Get("WWW-Authenticate"); strings.Contains(ch, ts.URL) {
		t.Fatalf("client saw the legacy registry's challenge: %d %q", resp.StatusCode, ch)
	}
}

package proxy_test

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"testing"

	"github.com/artifact-registry/artifact-registry/legacy/inventory"
	"github.com/artifact-registry/artifact-registry/legacy/legacytest"
	"github.com/artifact-registry/artifact-registry/legacy/proxy"
)

// BenchmarkRoute: the per-request routing cost of proxy mode, for a
// migrated name (cached after the first lookup) and a name still on the
// legacy registry (one indexed query).
func BenchmarkRoute(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b)
	legacytest.PushImage(b, e.legacyHost, "team/app", "v1", legacytest.Image{Seed: 1})
	legacytest.PushImage(b, e.legacyHost, "team/tool", "v1", legacytest.Image{Seed: 2})
	if _, err := inventory.Run(ctx, e.st, e.bucket(), e.rules); err != nil {
		b.Fatal(err)
	}
	if _, err := e.st.Pool().Exec(ctx, `UPDATE legacy_repositories SET status = 4 WHERE legacy_path = 'team/app'`); err != nil {
		b.Fatal(err)
	}
	r := proxy.New(e.st, e.rules, func(string) bool { return false })
	for _, c := range []struct{ name, path string }{{"migrated", "team/app"}, {"legacy", "team/tool"}, {"unknown", "team/none"}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := r.Route(ctx, c.path, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHeldTarget: the extra cost proxy mode adds to a request under a
// local (not legacy) name: a migrated target (cached after the first
// lookup), a target still held, and a plain local name (two indexed
// queries: namespace, then inventory by target).
func BenchmarkHeldTarget(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b)
	legacytest.PushImage(b, e.legacyHost, "team/app", "v1", legacytest.Image{Seed: 1})
	legacytest.PushImage(b, e.legacyHost, "team/tool", "v1", legacytest.Image{Seed: 2})
	if _, err := inventory.Run(ctx, e.st, e.bucket(), e.rules); err != nil {
		b.Fatal(err)
	}
	if _, err := e.st.Pool().Exec(ctx, `UPDATE legacy_repositories SET status = 4 WHERE legacy_path = 'team/app'`); err != nil {
		b.Fatal(err)
	}
	r := proxy.New(e.st, e.rules, func(string) bool { return false })
	for _, c := range []struct {
		name, target string
		held         bool
	}{{"migrated", "acme/legacy/app", false}, {"held", "acme/legacy/tool", true}, {"local", "acme/images/web", false}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, held, err := r.HeldTarget(ctx, c.target); err != nil || held != c.held {
					b.Fatalf("held %v err %v", held, err)
				}
			}
		})
	}
}

// BenchmarkProxyBlobPull: a 16 MiB blob pulled from the legacy registry
// directly and through our proxy (streamed, not buffered).
func BenchmarkProxyBlobPull(b *testing.B) {
	e := newEnv(b)
	content := make([]byte, 16<<20)
	_, _ = rand.Read(content)
	d := legacytest.PushBlob(b, e.legacyHost, "team/big", content)
	for _, c := range []struct{ name, base string }{
		{"direct", "http://" + e.legacyHost}, {"proxied", e.url},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(content)))
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodGet, c.base+"/v2/team/big/blobs/"+d, nil)
				req.SetBasicAuth("ci", adminToken)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || n != int64(len(content)) {
					b.Fatalf("%d, %d bytes", resp.StatusCode, n)
				}
			}
		})
	}
}

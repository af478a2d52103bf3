package oci

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/artifact-registry/artifact-registry/store"
)

// BenchmarkVirtualManifest measures what a virtual repository adds to a
// manifest GET by tag: the same image read directly from its hosted
// repository, and through virtuals whose first upstreams lack the image
// (the hosted upstream is at position 1, 3 and, nested one level, 2).
// Loopback HTTP, real PostgreSQL; the payload cache serves the bytes in
// every case, so the difference is the resolution.
func BenchmarkVirtualManifest(b *testing.B) {
	s := newRemoteServer(b)
	if _, err := s.Store.CreateNamespace(context.Background(), "bench"); err != nil {
		b.Fatal(err)
	}
	for _, n := range []string{"h", "e1", "e2"} {
		s.hosted(b, "bench", n)
	}
	c := newBenchClient(b, s.testServer, "bench/h/app")
	cfg := []byte(`{"architecture":"amd64","os":"linux"}`)
	layer := []byte("virtual benchmark layer")
	m := imageManifest(c.pushBlob(cfg), c.pushBlob(layer), int64(len(cfg)), int64(len(layer)))
	c.pushManifest("v1", m)
	for _, e := range []string{"e1", "e2"} {
		ec := newBenchClient(b, s.testServer, "bench/"+e+"/other")
		ec.pushBlob(cfg)
		ec.pushBlob(layer)
		ec.pushManifest("v1", m)
	}
	s.virtual(b, "bench", "v-first", store.VirtualInput{Upstreams: members("h")})
	s.virtual(b, "bench", "v-third", store.VirtualInput{Upstreams: members("e1", "e2", "h")})
	s.virtual(b, "bench", "v-nested", store.VirtualInput{Upstreams: members("e1", "v-first")})
	for _, repo := range []string{"h", "v-first", "v-third", "v-nested"} {
		b.Run(repo, func(b *testing.B) {
			path := fmt.Sprintf("/v2/bench/%s/app/manifests/v1", repo)
			drain(c.expect(c.req(http.MethodGet, path, nil, -1, "Accept", mtOCIManifest), http.StatusOK))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				drain(c.expect(c.req(http.MethodGet, path, nil, -1, "Accept", mtOCIManifest), http.StatusOK))
			}
		})
	}
}

package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/legacy/legacytest"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// BenchmarkRemoteCache measures, side by side on one machine, what a pull
// of one image with a single 256 MiB layer costs (manifest, then the
// layer, read and hashed by the client):
//
//	direct-upstream   from the upstream itself (distribution v3)
//	remote-cold       through a pull-through cache that holds nothing
//	                  (a fresh namespace per iteration), the fill's spool
//	                  in the temporary directory (here on disk)
//	remote-cold-tmpfs the same with the spool on a tmpfs (/dev/shm)
//	dist-proxy-cold   through distribution v3 in proxy mode, cold (a
//	                  fresh proxy per iteration)
//	remote-warm       through the cache once it holds the image
//	hosted            the same image pushed to a hosted repository
//
// MB/s is the layer's throughput; ttfb-ms the time from the layer request
// to its first byte. Run: go test -run '^$' -bench BenchmarkRemoteCache
// -benchtime 3x ./protocol/oci/
func BenchmarkRemoteCache(b *testing.B) {
	const size = 256 << 20
	up := newTestUpstream(b, authNone)
	layerBytes := randomContent(size, 99)
	manifest, _, layer := up.pushImage("bench/image", "v1", "amd64", layerBytes)
	up.secure()
	s := newRemoteServer(b)

	// The hosted copy, pushed through the protocol.
	s.repo(b, "hostedns", "images", enum.FormatOCI, enum.VisibilityPrivate)
	tar := tarOf(b, "file.bin", layerBytes)
	pushHosted(b, s, "/v2/hostedns/images/bench/image", tar, manifestOfUpstream(b, up, manifest))

	pull := func(b *testing.B, base, name string, auth bool) time.Duration {
		b.Helper()
		get := func(path string) *http.Response {
			req, _ := http.NewRequest(http.MethodGet, base+"/v2/"+name+path, nil)
			req.Header.Set("Accept", mtOCIManifest)
			if auth {
				req.SetBasicAuth("anyone", testToken)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				b.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
			}
			return resp
		}
		resp := get("/manifests/v1")
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		start := time.Now()
		resp = get("/blobs/" + layer)
		defer resp.Body.Close()
		first := make([]byte, 1)
		if _, err := io.ReadFull(resp.Body, first); err != nil {
			b.Fatal(err)
		}
		ttfb := time.Since(start)
		h := sha256.New()
		h.Write(first)
		if _, err := io.Copy(h, resp.Body); err != nil {
			b.Fatal(err)
		}
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != layer {
			b.Fatalf("layer digest %s", got)
		}
		return ttfb
	}
	report := func(b *testing.B, ttfb time.Duration) {
		b.SetBytes(int64(len(tar)))
		b.ReportMetric(float64(ttfb.Microseconds())/1000/float64(b.N), "ttfb-ms")
	}

	b.Run("direct-upstream", func(b *testing.B) {
		var ttfb time.Duration
		for range b.N {
			ttfb += pull(b, up.URL, "bench/image", false)
		}
		report(b, ttfb)
	})
	n := 0
	b.Run("remote-cold", func(b *testing.B) {
		var ttfb time.Duration
		for range b.N {
			b.StopTimer()
			n++
			ns := fmt.Sprintf("cold%d", n)
			s.remote(b, ns, "hub", up.URL, enum.VisibilityPrivate, 24, nil)
			b.StartTimer()
			ttfb += pull(b, s.URL, ns+"/hub/bench/image", true)
		}
		report(b, ttfb)
	})
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		shm, err := os.MkdirTemp("/dev/shm", "remote-bench-spool-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = os.RemoveAll(shm) })
		s2 := newRemoteServer(b, shm)
		b.Run("remote-cold-tmpfs", func(b *testing.B) {
			var ttfb time.Duration
			for range b.N {
				b.StopTimer()
				n++
				ns := fmt.Sprintf("cold%d", n)
				s2.remote(b, ns, "hub", up.URL, enum.VisibilityPrivate, 24, nil)
				b.StartTimer()
				ttfb += pull(b, s2.URL, ns+"/hub/bench/image", true)
			}
			report(b, ttfb)
		})
	}
	b.Run("dist-proxy-cold", func(b *testing.B) {
		var ttfb time.Duration
		for range b.N {
			b.StopTimer()
			host, stop := legacytest.StartRegistryConfig(b, legacytest.V3, b.TempDir(), "proxy:\n  remoteurl: "+up.URL+"\n")
			b.StartTimer()
			ttfb += pull(b, "http://"+host, "bench/image", false)
			b.StopTimer()
			stop()
			b.StartTimer()
		}
		report(b, ttfb)
	})
	s.remote(b, "warm", "hub", up.URL, enum.VisibilityPrivate, 24, nil)
	pull(b, s.URL, "warm/hub/bench/image", true)
	waitCached(b, s, "warm", "hub", "bench/image", layer)
	b.Run("remote-warm", func(b *testing.B) {
		var ttfb time.Duration
		for range b.N {
			ttfb += pull(b, s.URL, "warm/hub/bench/image", true)
		}
		report(b, ttfb)
	})
	b.Run("hosted", func(b *testing.B) {
		var ttfb time.Duration
		for range b.N {
			ttfb += pull(b, s.URL, "hostedns/images/bench/image", true)
		}
		report(b, ttfb)
	})
}

// manifestOfUpstream reads a manifest's bytes from the upstream.
func manifestOfUpstream(b *testing.B, up *testUpstream, digest string) []byte {
	b.Helper()
	req, _ := http.NewRequest(http.MethodGet, up.URL+"/v2/bench/image/manifests/"+digest, nil)
	req.Header.Set("Accept", mtOCIManifest)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	m, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("manifest: %d %v", resp.StatusCode, err)
	}
	return m
}

// pushHosted pushes the image's config, layer and manifest to a hosted
// repository of the server.
func pushHosted(b *testing.B, s *remoteServer, base string, layer, manifest []byte) {
	b.Helper()
	var m struct {
		Config struct{ Digest string }
	}
	if err := json.Unmarshal(manifest, &m); err != nil {
		b.Fatal(err)
	}
	cfg := fmt.Appendf(nil, `{"architecture":%q,"os":"linux","rootfs":{"type":"layers","diff_ids":[%q]}}`, "amd64", sha256Hex(layer))
	if sha256Hex(cfg) != m.Config.Digest {
		b.Fatal("config differs from the upstream's")
	}
	for _, blob := range [][]byte{cfg, layer} {
		resp := s.do(b, http.MethodPost, base+"/blobs/uploads/?digest="+sha256Hex(blob), bytes.NewReader(blob), nil, true)
		readBody(b, resp)
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("push blob: %d", resp.StatusCode)
		}
	}
	resp := s.do(b, http.MethodPut, base+"/manifests/v1", bytes.NewReader(manifest), map[string]string{"Content-Type": mtOCIManifest}, true)
	readBody(b, resp)
	if resp.StatusCode != http.StatusCreated {
		b.Fatalf("push manifest: %d", resp.StatusCode)
	}
}

// waitCached waits until the remote's image caches the layer (the fill
// commits just after the last byte reached the client).
func waitCached(b *testing.B, s *remoteServer, ns, repo, image, layer string) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		t, err := s.cs.ResolveTarget(context.Background(), ns, repo, image)
		if err != nil {
			b.Fatal(err)
		}
		d, aerr := parseDigest(layer)
		if aerr != nil {
			b.Fatal(aerr)
		}
		if _, err := s.cs.RemoteBlob(context.Background(), t, [32]byte(d)); err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("the layer was not cached")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

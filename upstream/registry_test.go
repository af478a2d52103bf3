package upstream_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/artifact-registry/artifact-registry/legacy/legacytest"
	"github.com/artifact-registry/artifact-registry/upstream"
)

const ociManifest = "application/vnd.oci.image.manifest.v1+json"

// TestDistributionTokenAuth runs the client against distribution v3 with
// token auth (ES256 tokens from the test token service, which checks the
// Basic credentials), reached the way such setups usually are: /token and
// /v2/ on one host:port. The challenge is discovered on the first
// request; one token serves every request of its scope; concurrent first
// fetches of one layer make one upstream GET; bytes match their digests;
// bad or missing credentials are KindUnauthorized.
func TestDistributionTokenAuth(t *testing.T) {
	dir := t.TempDir()
	host, stop := legacytest.StartRegistry(t, dir)
	layer := make([]byte, 16<<20)
	rnd := rand.New(rand.NewPCG(7, 8))
	for i := range layer {
		layer[i] = byte(rnd.Uint32())
	}
	config := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`)
	layerDigest := legacytest.PushBlob(t, host, "team/app", layer)
	configDigest := legacytest.PushBlob(t, host, "team/app", config)
	manifest := fmt.Appendf(nil, `{"schemaVersion":2,"mediaType":%q,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":%q,"size":%d}]}`,
		ociManifest, configDigest, len(config), layerDigest, len(layer))
	manifestDigest := legacytest.PutManifest(t, host, "team/app", "v1", ociManifest, manifest)
	otherDigest := legacytest.PushBlob(t, host, "team/other", []byte("another repository"))
	stop()

	ts := legacytest.StartTokenServer(t, "puller", "pull-secret")
	var registry atomic.Pointer[url.URL]
	tokenURL, _ := url.Parse(ts.URL)
	var mu sync.Mutex
	layerGets := 0
	// The layer's headers wait until every reader has joined, so that the
	// count below does not depend on goroutine scheduling.
	release := make(chan struct{})
	toRegistry := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(registry.Load()); r.Out.Host = r.In.Host },
		ModifyResponse: func(resp *http.Response) error {
			if resp.Request.Method == http.MethodGet && resp.StatusCode == http.StatusOK &&
				resp.Request.URL.Path == "/v2/team/app/blobs/"+layerDigest {
				mu.Lock()
				layerGets++
				mu.Unlock()
				<-release
			}
			return nil
		},
	}
	toTokens := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(tokenURL) }}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			toTokens.ServeHTTP(w, r)
			return
		}
		toRegistry.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	auth := strings.Replace(ts.RegistryConfig(), ts.URL+"/token", front.URL+"/token", 1)
	host2, _ := legacytest.StartRegistryConfig(t, legacytest.V3, dir, auth)
	registry.Store(&url.URL{Scheme: "http", Host: host2})

	creds := &upstream.Credentials{Username: "puller", Password: "pull-secret"}
	metrics := upstream.NewMetrics()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.Collectors()...)
	c, err := upstream.New(upstream.Config{URL: front.URL, Name: "distribution", Credentials: creds, SpoolDir: t.TempDir(), Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	ctx := context.Background()
	scopes := []string{"repository:team/app:pull"}

	resp, err := c.Do(ctx, &upstream.Request{Path: "v2/team/app/manifests/v1", Scopes: scopes, Header: http.Header{"Accept": {ociManifest}}})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || digestOf(body) != manifestDigest || resp.Header.Get("Docker-Content-Digest") != manifestDigest {
		t.Fatalf("manifest: %v, digest %s", err, resp.Header.Get("Docker-Content-Digest"))
	}

	want, _ := upstream.ParseDigest(layerDigest)
	var wg sync.WaitGroup
	sums := make([]string, 8)
	for i := range sums {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fr, err := c.Fill(ctx, upstream.FillRequest{Key: "blob:" + layerDigest,
				Request: upstream.Request{Path: "v2/team/app/blobs/" + layerDigest, Scopes: scopes},
				Expect:  upstream.Expect{Size: int64(len(layer)), Digests: []upstream.Digest{want}}})
			if err != nil {
				t.Error(err)
				return
			}
			defer fr.Close()
			h := sha256.New()
			if _, err := io.Copy(h, fr); err != nil {
				t.Error(err)
				return
			}
			sums[i] = "sha256:" + hex.EncodeToString(h.Sum(nil))
		}()
	}
	for metricValue(t, reg, upstream.MetricFillJoins) < float64(len(sums)-1) {
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	wg.Wait()
	for i, s := range sums {
		if s != layerDigest {
			t.Fatalf("reader %d: %s", i, s)
		}
	}
	mu.Lock()
	gets := layerGets
	mu.Unlock()
	if gets != 1 {
		t.Fatalf("upstream layer GETs %d, want 1", gets)
	}
	if issued := ts.Issued(); len(issued) != 1 || issued[0] != "repository:team/app:pull" {
		t.Fatalf("tokens issued %q, want one for the repository", issued)
	}

	resp, err = c.Do(ctx, &upstream.Request{Path: "v2/team/other/blobs/" + otherDigest, Scopes: []string{"repository:team/other:pull"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := len(ts.Issued()); n != 2 {
		t.Fatalf("tokens issued %d after a second repository, want 2", n)
	}
	_, err = c.Do(ctx, &upstream.Request{Path: "v2/team/app/manifests/nope", Scopes: scopes, Header: http.Header{"Accept": {ociManifest}}})
	if !upstream.IsKind(err, upstream.KindNotFound) {
		t.Fatalf("unknown tag: %v", err)
	}

	for _, cr := range []*upstream.Credentials{{Username: "puller", Password: "wrong-secret"}, nil} {
		bad, err := upstream.New(upstream.Config{URL: front.URL, Name: "bad", Credentials: cr})
		if err != nil {
			t.Fatal(err)
		}
		_, err = bad.Do(ctx, &upstream.Request{Path: "v2/team/app/manifests/v1", Scopes: scopes, Header: http.Header{"Accept": {ociManifest}}})
		if !upstream.IsKind(err, upstream.KindUnauthorized) {
			t.Fatalf("credentials %v: %v", cr != nil, err)
		}
		if strings.Contains(err.Error(), "wrong-secret") || strings.Contains(err.Error(), front.URL) {
			t.Fatalf("error text %q", err)
		}
		_ = bad.Close(ctx)
	}
	if ts.Denied() != 2 {
		t.Fatalf("token requests denied %d, want 2", ts.Denied())
	}
}

// metricValue sums a counter's series.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	v := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				v += m.GetCounter().GetValue()
			}
		}
	}
	return v
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Package ocibench is the OCI workload code shared by the protocol
// package's benchmarks (an in-process server) and make bench-compare (our
// serve binary beside other registries): a keep-alive client that speaks
// the distribution API, and the many-tags workload.
package ocibench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

// Media types the workloads push.
const (
	MediaManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaConfig   = "application/vnd.oci.image.config.v1+json"
	MediaLayer    = "application/vnd.oci.image.layer.v1.tar"
)

// Descriptor is an OCI content descriptor.
type Descriptor struct {
	MediaType string `json:"mediaType,omitempty"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

// Client talks to one registry at Base (http://host:port), with HTTP
// Basic credentials when User is set.
type Client struct {
	Base       string
	User, Pass string
	HC         *http.Client
}

// New returns a client with its own keep-alive pool, large enough for the
// workloads' concurrency, that does not ask for compression (registries
// serve blobs as they are).
func New(base, user, pass string) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	tr.DisableCompression = true
	return &Client{Base: strings.TrimSuffix(base, "/"), User: user, Pass: pass, HC: &http.Client{Transport: tr}}
}

// Do sends one request (a path is relative to Base, a Location header's
// URL is used as it is) and returns the response when its status is want;
// otherwise an error with the body.
func (c *Client) Do(ctx context.Context, method, pathOrURL string, body []byte, want int, hdr ...string) (*http.Response, error) {
	u := pathOrURL
	if strings.HasPrefix(u, "/") {
		u = c.Base + u
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, pathOrURL, err)
	}
	req.ContentLength = int64(len(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if c.User != "" {
		req.SetBasicAuth(c.User, c.Pass)
	}
	resp, err := c.HC.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, req.URL.Path, err)
	}
	if resp.StatusCode != want {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %d, want %d: %s", method, req.URL.Path, resp.StatusCode, want, b)
	}
	return resp, nil
}

// Drain reads and closes a response body, so its connection is reused.
func Drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// PushBlob uploads data into repository name in two requests (POST, then
// PUT ?digest= with the body), which every registry supports.
func (c *Client) PushBlob(ctx context.Context, name string, data []byte) (Descriptor, error) {
	return c.PushBlobDigest(ctx, name, data, fmt.Sprintf("sha256:%x", sha256.Sum256(data)))
}

// PushBlobDigest is PushBlob with data's digest dg computed by the caller
// (a timed upload that should not include the client's hashing).
func (c *Client) PushBlobDigest(ctx context.Context, name string, data []byte, dg string) (Descriptor, error) {
	resp, err := c.Do(ctx, http.MethodPost, "/v2/"+name+"/blobs/uploads/", nil, http.StatusAccepted)
	if err != nil {
		return Descriptor{}, err
	}
	Drain(resp)
	loc := resp.Header.Get("Location")
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	resp, err = c.Do(ctx, http.MethodPut, loc+sep+"digest="+dg, data, http.StatusCreated, "Content-Type", "application/octet-stream")
	if err != nil {
		return Descriptor{}, err
	}
	Drain(resp)
	return Descriptor{Digest: dg, Size: int64(len(data))}, nil
}

// ImageManifest is an OCI image manifest of config and layers.
func ImageManifest(config Descriptor, layers ...Descriptor) []byte {
	config.MediaType = MediaConfig
	for i := range layers {
		if layers[i].MediaType == "" {
			layers[i].MediaType = MediaLayer
		}
	}
	b, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": MediaManifest, "config": config, "layers": layers})
	return b
}

// PushManifest PUTs an image manifest of config and layers as name:ref.
func (c *Client) PushManifest(ctx context.Context, name, ref string, config Descriptor, layers ...Descriptor) error {
	resp, err := c.Do(ctx, http.MethodPut, "/v2/"+name+"/manifests/"+ref, ImageManifest(config, layers...), http.StatusCreated,
		"Content-Type", MediaManifest)
	if err != nil {
		return err
	}
	Drain(resp)
	return nil
}

// TagName is the i-th tag of SeedTags.
func TagName(i int) string { return fmt.Sprintf("v%05d", i) }

// SeedTags pushes n tagged manifests into name, each with its own config
// blob and one shared layer, with 8 clients at once.
func SeedTags(ctx context.Context, c *Client, name string, n int) error {
	layer, err := c.PushBlob(ctx, name, []byte("shared layer"))
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range n {
		g.Go(func() error {
			cfg, err := c.PushBlob(ctx, name, fmt.Appendf(nil, `{"architecture":"amd64","os":"linux","created":"%d"}`, i))
			if err != nil {
				return err
			}
			return c.PushManifest(ctx, name, TagName(i), cfg, layer)
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("seeding %d tags into %s: %w", n, name, err)
	}
	return nil
}

// GetByTag GETs the manifest of the i-th of tags tags, in a scattered
// order (consecutive i land far apart), and returns the request's time.
func GetByTag(ctx context.Context, c *Client, name string, i, tags int) (time.Duration, error) {
	t0 := time.Now()
	resp, err := c.Do(ctx, http.MethodGet, "/v2/"+name+"/manifests/"+TagName((i*7919)%tags), nil, http.StatusOK, "Accept", MediaManifest)
	if err != nil {
		return 0, err
	}
	Drain(resp)
	return time.Since(t0), nil
}

// Percentile returns the p-quantile (0..1) of lat, sorting it.
func Percentile(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return lat[min(len(lat)-1, int(p*float64(len(lat))))]
}

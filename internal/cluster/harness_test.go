package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The harness itself: the proxy spreads requests over every instance,
// stops sending to a killed one and sends to it again after a restart.
func TestHarness(t *testing.T) {
	c := Start(t, Options{})
	ctx := context.Background()
	if err := c.CreateNamespace(ctx, "harness"); err != nil {
		t.Fatal(err)
	}
	get := func() int {
		t.Helper()
		resp, err := http.Get(c.URL + "/-/ready")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 30 {
		if code := get(); code != http.StatusOK {
			t.Fatalf("GET /-/ready through the proxy = %d", code)
		}
	}
	for i := range c.Instances() {
		if c.Requests(i) < 5 {
			t.Errorf("instance %d got %d of the requests", i, c.Requests(i))
		}
	}
	checkStorageFault(t, c)
	if err := c.Kill(1); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.WaitBalanced(wctx); err != nil {
		t.Fatal(err)
	}
	before := c.Requests(1)
	for range 10 {
		if code := get(); code != http.StatusOK {
			t.Fatalf("with instance 1 down: %d", code)
		}
	}
	if c.Requests(1) != before {
		t.Errorf("the proxy sent %d requests to the killed instance", c.Requests(1)-before)
	}
	if err := c.Start(1); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitBalanced(wctx); err != nil {
		t.Fatal(err)
	}
	// Each instance sees the namespace the first one created.
	var out struct{ Namespace struct{ Slug string } }
	for i := range c.Instances() {
		if err := c.GraphQL(ctx, c.Instance(i).URL, c.AdminToken, `{ namespace(slug: "harness") { slug } }`, nil, &out); err != nil || out.Namespace.Slug != "harness" {
			t.Errorf("instance %d: namespace = %+v, %v", i, out, err)
		}
	}
}

// checkStorageFault stores a blob, breaks object storage, reads the blob
// (the instances must answer, and not with its bytes), heals it and reads
// the blob again.
func checkStorageFault(t *testing.T, c *Cluster) {
	t.Helper()
	ctx := context.Background()
	must(t, c.CreateRepository(ctx, "harness", "oci", "OCI", "PRIVATE"))
	token, err := c.CreateToken(ctx, "harness", "ci", "WRITE")
	must(t, err)
	data := bytes.Repeat([]byte("stored before the outage "), 4096)
	sum := sha256.Sum256(data)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	blob := "/v2/harness/oci/app/blobs/" + digest
	if code, _ := send(t, http.MethodPost, c.URL+"/v2/harness/oci/app/blobs/uploads/?digest="+digest, token, data); code != http.StatusCreated {
		t.Fatalf("monolithic upload = %d", code)
	}
	c.BreakStorage()
	start := time.Now()
	code, body := send(t, http.MethodGet, c.URL+blob, token, nil)
	t.Logf("GET of a blob with object storage broken: %d in %s: %.200s", code, time.Since(start).Round(time.Millisecond), body)
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "object storage is unavailable") {
		t.Errorf("GET of a blob with object storage broken = %d %.200s, want 503 in OCI's format", code, body)
	}
	c.HealStorage()
	if code, body := send(t, http.MethodGet, c.URL+blob, token, nil); code != http.StatusOK || !bytes.Equal(body, data) {
		t.Errorf("GET after HealStorage = %d, %d bytes", code, len(body))
	}
}

func send(t *testing.T, method, url, token string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	must(t, err)
	req.SetBasicAuth("ci", token)
	req.Header.Set("Content-Type", "application/octet-stream")
	client := &http.Client{Timeout: 2 * time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		t.Logf("%s %s: %v", method, url, err)
		return 0, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Logf("%s %s: reading the body: %v", method, url, err)
	}
	return resp.StatusCode, b
}

package cluster

import (
	"context"
	"net/http"
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

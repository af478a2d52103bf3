package ocibench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	lat := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	if got := Percentile(lat, 0.5); got != 6 {
		t.Errorf("p50 = %v, want 6", got)
	}
	if got := Percentile(lat, 0.99); got != 10 {
		t.Errorf("p99 = %v, want 10", got)
	}
	if got := Percentile(nil, 0.5); got != 0 {
		t.Errorf("p50 of nothing = %v", got)
	}
}

// A refused request's error carries the registry's answer; a Location
// that already has a query gets the digest appended to it.
func TestPushBlob(t *testing.T) {
	var put string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			w.Header().Set("Location", "/v2/a/blobs/uploads/1?state=x")
			w.WriteHeader(http.StatusAccepted)
		case r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/v2/a/blobs/"):
			put = r.URL.RawQuery
			w.WriteHeader(http.StatusCreated)
		default:
			http.Error(w, `{"errors":[{"code":"DENIED"}]}`, http.StatusForbidden)
		}
	}))
	defer srv.Close()
	c := New(srv.URL, "u", "p")
	d, err := c.PushBlob(context.Background(), "a", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "state=x&digest=" + d.Digest; put != want {
		t.Errorf("PUT query %q, want %q", put, want)
	}
	err = c.PushManifest(context.Background(), "a", "v1", d, d)
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "DENIED") {
		t.Errorf("refused manifest: %v", err)
	}
}

package httpserver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestOpsEndpoints(t *testing.T) {
	var notReady error
	s := New(Options{Ready: func(context.Context) error { return notReady }})
	if code, _ := get(t, s.Handler(), "/-/health"); code != http.StatusOK {
		t.Fatalf("health = %d", code)
	}
	if code, _ := get(t, s.Handler(), "/-/ready"); code != http.StatusOK {
		t.Fatalf("ready = %d", code)
	}
	notReady = errors.New("database migrations pending")
	code, body := get(t, s.Handler(), "/-/ready")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "migrations pending") {
		t.Fatalf("ready while not ready = %d %q", code, body)
	}
}

func TestMetricsUseRouteTemplates(t *testing.T) {
	s := New(Options{})
	s.Router().HandleFunc("/v2/{name:.+}/blobs/{digest}", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	})
	get(t, s.Handler(), "/v2/acme/repo/blobs/sha256:abc")
	get(t, s.Handler(), "/no/such/path")
	_, body := get(t, s.Handler(), "/metrics")
	for _, want := range []string{
		`artifact_registry_http_requests_total{method="GET",route="/v2/{name:.+}/blobs/{digest}",status="202"} 1`,
		`artifact_registry_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`artifact_registry_http_request_duration_seconds_bucket{method="GET",route="/v2/{name:.+}/blobs/{digest}",status="202"`,
		`go_goroutines`,
		`process_cpu_seconds_total`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(body, "sha256:abc") {
		t.Error("metrics leak raw paths")
	}
}

func TestGracefulShutdownWaitsForRequests(t *testing.T) {
	s := New(Options{})
	entered, release := make(chan struct{}), make(chan struct{})
	s.Router().HandleFunc("/slow", func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "done")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.ServeListener(ctx, ln, 10*time.Second) }()

	got := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/slow")
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- string(b)
	}()
	<-entered
	cancel()
	close(release)
	if body := <-got; body != "done" {
		t.Fatalf("in-flight request got %q", body)
	}
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

package httpserver

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The request log shows the route template and a redacted path and query:
// the token npm logout sends in its path, an access token anywhere in a
// path, credentials in a query; on matched and unmatched routes alike.
func TestRequestLogRedactsSecrets(t *testing.T) {
	var buf bytes.Buffer
	s := New(Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	s.Router().PathPrefix("/npm/").HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	const secret = "arp_01J9ZK3V8W6Q0T5N2M4B7X1C3D5F7H9KaBcDeFgHiJkLmNoPqRsTuVwXyZ0123"
	const opaque = "an-opaque-token-value-42"
	for _, target := range []string{
		"/npm/acme/js/-/user/token/" + secret,
		"/npm/acme/js/-/user/token/" + opaque,
		"/npm/acme/js/-/npm/v1/tokens/token/" + opaque,
		"/npm/acme/js/lib?_authToken=" + opaque,
		"/elsewhere/" + secret + "?password=" + opaque,
	} {
		s.Handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodDelete, target, nil))
	}
	log := buf.String()
	if strings.Contains(log, secret) || strings.Contains(log, opaque) {
		t.Fatalf("the request log holds a secret:\n%s", log)
	}
	for _, want := range []string{`route=/npm/`, `path=/npm/acme/js/-/user/token/[REDACTED]`, `route=unmatched`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

package graph

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/auth"
)

// TestSessionCookieNeedsCSRF: /graphql takes the UI's session cookie only
// with the session's CSRF header, so a cross-site page that makes the
// browser send the cookie cannot run a mutation; GET never runs one;
// scripts' Bearer requests need no CSRF token; a signed-out session is
// UNAUTHENTICATED and its cookie is expired.
func TestSessionCookieNeedsCSRF(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	api := newTestAPIWith(t, Options{Logger: log})
	authn := auth.New(api.st, auth.Options{AdminToken: adminToken, Logger: log})
	s, err := authn.SignIn(context.Background(), adminToken)
	if err != nil {
		t.Fatal(err)
	}
	cookie := &http.Cookie{Name: auth.SessionCookie, Value: s.Secret}
	send := func(method, query, csrf string) (*gqlResponse, *http.Response) {
		t.Helper()
		var req *http.Request
		if method == http.MethodGet {
			req, _ = http.NewRequest(method, api.srv.URL+"/graphql?query="+url.QueryEscape(query), nil)
		} else {
			req, _ = http.NewRequest(method, api.srv.URL+"/graphql", strings.NewReader(`{"query":`+jsonString(query)+`}`))
			req.Header.Set("Content-Type", "application/json")
		}
		req.AddCookie(cookie)
		if csrf != "" {
			req.Header.Set(auth.CSRFHeader, csrf)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out := &gqlResponse{Status: resp.StatusCode}
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: %d, not JSON: %v", method, query, resp.StatusCode, err)
		}
		return out, resp
	}
	create := func(slug string) string {
		return `mutation { createNamespace(input: {slug: "` + slug + `"}) { namespace { id } } }`
	}
	exists := func(slug string) bool {
		var n int
		if err := api.pool.QueryRow(context.Background(), `SELECT count(*) FROM namespaces WHERE slug = $1`, slug).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}

	if r, _ := send(http.MethodPost, create("with-csrf"), s.CSRFToken); len(r.Errors) > 0 || !exists("with-csrf") {
		t.Fatalf("cookie and CSRF token: %+v", r.Errors)
	}
	for _, c := range []struct{ name, method, csrf string }{
		{"no CSRF", http.MethodPost, ""},
		{"wrong CSRF", http.MethodPost, s.CSRFToken[1:] + "A"},
		{"GET without CSRF", http.MethodGet, ""},
	} {
		r, _ := send(c.method, create("forged"), c.csrf)
		if r.Status != http.StatusForbidden || r.code() != auth.CodeCSRFToken {
			t.Errorf("%s: %d %+v", c.name, r.Status, r.Errors)
		}
	}
	if r, _ := send(http.MethodGet, create("by-get"), s.CSRFToken); len(r.Errors) == 0 || exists("by-get") {
		t.Errorf("mutation over GET: %d %+v", r.Status, r.Errors)
	}
	if exists("forged") {
		t.Fatal("a request without the CSRF token ran its mutation")
	}
	if r, _ := send(http.MethodPost, `{ viewer { kind } }`, s.CSRFToken); !strings.Contains(string(r.Data), "ADMIN") {
		t.Fatalf("viewer over the session: %s %+v", r.Data, r.Errors)
	}
	api.admin(create("by-bearer"), nil, nil) // Authorization: Bearer, no CSRF token

	if err := authn.SignOut(context.Background(), s.Secret); err != nil {
		t.Fatal(err)
	}
	r, resp := send(http.MethodPost, `{ viewer { kind } }`, s.CSRFToken)
	if r.Status != http.StatusUnauthorized || r.code() != auth.CodeUnauthenticated {
		t.Fatalf("after sign-out: %d %+v", r.Status, r.Errors)
	}
	if sc := resp.Header.Get("Set-Cookie"); !strings.Contains(sc, auth.SessionCookie+"=;") || !strings.Contains(sc, "Max-Age=0") {
		t.Fatalf("the ended session's cookie is not expired: %q", sc)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

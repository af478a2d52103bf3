package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/artifact-registry/artifact-registry/auth"
)

// noSecretReadable fails the test if a page script can read the secret or
// the session cookie: web storage and document.cookie.
func (b *tab) noSecretReadable(secret string) {
	b.t.Helper()
	all := b.eval(`JSON.stringify([Object.entries(sessionStorage), Object.entries(localStorage), document.cookie])`)
	if strings.Contains(all, secret) || strings.Contains(all, auth.SessionCookie) {
		b.t.Fatalf("a page script can read a secret: %s", all)
	}
}

// sessionCookie is the session cookie as the browser holds it.
func (b *tab) sessionCookie() *network.Cookie {
	b.t.Helper()
	res, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.base}})
	if err != nil {
		b.t.Fatal(err)
	}
	for _, c := range res.Cookies {
		if c.Name == auth.SessionCookie {
			return c
		}
	}
	return nil
}

// fetchStatus runs fetch in the page and returns "<status> <body>".
func (b *tab) fetchStatus(url, init string) string {
	b.t.Helper()
	return run(b, "fetch "+url, chromedp.Evaluate[string](
		`fetch(`+jsString(url)+`, `+init+`).then(async (r) => r.status + " " + await r.text())`, chromedp.EvalAwaitPromise))
}

// TestUISession: the UI signs in through the session endpoint; no page
// script can read the token or the session cookie; GraphQL works over the
// cookie with the CSRF token the UI keeps in memory; a POST that carries
// the cookie without that token (what a forged cross-site request looks
// like) and a form posted from another site are refused; a Maven file is
// a download, not a navigation; a reload keeps the session; sign-out ends
// it on the server.
func TestUISession(t *testing.T) {
	requireChromium(t)
	s := newServer(t)
	s.graphql(t, `mutation { createNamespace(input: {slug: "acme"}) { namespace { id } } }`, nil)
	s.graphql(t, `mutation { createRepository(input: {namespace: "acme", name: "libs", format: MAVEN}) { repository { id } } }`, nil)
	s.mavenPut(t, "acme/libs/com/acme/evil/1.0/evil-1.0.pom",
		[]byte(`<html xmlns="http://www.w3.org/1999/xhtml"><script>window.opener && (window.opener.document.title = "pwned"); document.title = "pwned"</script></html>`))

	b := newBrowser(t, s.URL, 1280, 900)
	defer b.checkConsole()
	b.open("/sign-in")
	b.typeInto("#token", adminToken)
	b.click(button("Sign in"))
	b.see(heading("Namespaces"))
	b.see(link("acme"))
	b.see(text("Signed in as admin"))
	b.noSecretReadable(adminToken)
	ck := b.sessionCookie()
	if ck == nil || !ck.HTTPOnly || ck.SameSite != network.CookieSameSiteStrict || ck.Path != "/" {
		t.Fatalf("session cookie %+v", ck)
	}
	if strings.Contains(b.eval(`document.documentElement.outerHTML`), adminToken) {
		t.Fatal("the page still shows the token")
	}

	// The cookie alone is not enough: no CSRF token, no mutation.
	forged := `{method: "POST", credentials: "include", headers: {"Content-Type": "application/json"},
		body: JSON.stringify({query: 'mutation { createNamespace(input: {slug: "forged"}) { namespace { id } } }'})}`
	if got := b.fetchStatus("/graphql", forged); !strings.HasPrefix(got, "403 ") || !strings.Contains(got, auth.CodeCSRFToken) {
		t.Fatalf("POST with the cookie and without the CSRF token: %s", got)
	}
	// A form posted from another site (another origin and site: localhost,
	// not 127.0.0.1) neither carries the cookie nor passes as GraphQL.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<form id="f" method="POST" action="%s/graphql" enctype="text/plain">
<input name='{"query":"mutation { createNamespace(input: {slug: \"forged\"}) { namespace { id } } }","x":"' value='"}'></form>`, s.URL)
	}))
	defer evil.Close()
	run(b, "open the other site", chromedp.Navigate(strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)))
	// Submitted after the evaluation returns, so that the navigation
	// cannot take the page away under it.
	b.eval(`setTimeout(() => document.getElementById("f").submit(), 0), "posted"`)
	b.waitFor("the forged form was posted", `location.pathname === "/graphql" && document.readyState === "complete"`)
	if ns, err := s.Store.NamespaceBySlug(context.Background(), "forged"); err == nil {
		t.Fatalf("the forged mutation ran: namespace %s exists", ns.ID)
	}

	// A reload asks the server: still signed in, and GraphQL works.
	b.open("/n/acme/r/libs/maven/com.acme/evil/1.0")
	b.see(text("Signed in as admin"))
	b.see(link("evil-1.0.pom"))
	// Files are downloads: clicking one leaves the page where it is and
	// runs nothing of the file.
	if got := b.eval(`(() => { const a = [...document.querySelectorAll("a")].find((a) => a.textContent === "evil-1.0.pom"); return a.getAttribute("download") + "|" + a.rel })()`); got != "evil-1.0.pom|noopener noreferrer" {
		t.Fatalf("file link: %s", got)
	}
	before := b.location()
	b.click(link("evil-1.0.pom"))
	b.see(heading("1.0"))
	if after := b.location(); after != before || b.eval(`document.title`) == "pwned" {
		t.Fatalf("clicking a file navigated from %s to %s (title %q)", before, after, b.eval(`document.title`))
	}
	b.shot("40-session-download")

	// Sign out ends the session on the server, not only in the page.
	csrf := sessionCSRF(t, s, ck.Value)
	b.click(button("Sign out"))
	b.see(link("Sign in with a token"))
	b.noSecretReadable(adminToken)
	if b.sessionCookie() != nil {
		t.Error("the session cookie is kept after sign-out")
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/graphql", strings.NewReader(`{"query":"{ viewer { kind } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(auth.CSRFHeader, csrf)
	req.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: ck.Value})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the signed-out session still works: %s %s", resp.Status, body)
	}
}

// sessionCSRF asks GET /-/session for the CSRF token of a cookie.
func sessionCSRF(t *testing.T, s *server, cookie string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL+auth.SessionPath, nil)
	req.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: cookie})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info struct {
		SignedIn  bool   `json:"signedIn"`
		CSRFToken string `json:"csrfToken"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil || !info.SignedIn || info.CSRFToken == "" {
		t.Fatalf("GET %s: %+v %v", auth.SessionPath, info, err)
	}
	return info.CSRFToken
}

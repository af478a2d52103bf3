package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// offline lets the tab reach origin only, as on a machine without a way
// out: every other request of the page (a CDN's script, a font, an image)
// fails before it leaves the browser. It returns what it stopped and what
// it let through.
func (b *tab) offline(origin string) (blocked, passed func() []string) {
	b.t.Helper()
	var mu sync.Mutex
	var stopped, through []string
	// Subscribe before interception starts: no request may wait unseen.
	paused := chromedp.Events(b.ctx, fetch.RequestPaused)
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			u := ev.Request.URL
			mu.Lock()
			if u == origin || strings.HasPrefix(u, origin+"/") {
				through = append(through, u)
				mu.Unlock()
				_, _ = chromedp.Call(b.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
				continue
			}
			stopped = append(stopped, u)
			mu.Unlock()
			_, _ = chromedp.Call(b.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
		}
	}()
	if _, err := chromedp.Call(b.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}}); err != nil {
		b.t.Fatalf("intercept requests: %v", err)
	}
	list := func(l *[]string) func() []string {
		return func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), *l...)
		}
	}
	return list(&stopped), list(&through)
}

// GraphiQL's editors are CodeMirror 5 instances; a person types into
// them, the test sets their text as a paste would.
const (
	queryEditor    = `.graphiql-query-editor .CodeMirror`
	headersEditor  = `section.graphiql-editor-tool[aria-label="Headers"] .graphiql-editor:not(.hidden) .CodeMirror`
	responseEditor = `.graphiql-response .CodeMirror`
)

func (b *tab) setEditor(css, text string) {
	b.t.Helper()
	b.waitFor("editor "+css, fmt.Sprintf(`!!document.querySelector(%q)?.CodeMirror`, css))
	b.eval(fmt.Sprintf(`document.querySelector(%q).CodeMirror.setValue(%s), ""`, css, jsString(text)))
}

func (b *tab) editorText(css string) string {
	b.t.Helper()
	return b.eval(fmt.Sprintf(`document.querySelector(%q)?.CodeMirror?.getValue() ?? ""`, css))
}

// runQuery clicks GraphiQL's run button and waits for a new response
// that contains want.
func (b *tab) runQuery(want string) string {
	b.t.Helper()
	b.setEditor(responseEditor, "")
	b.click(button("Execute query (Ctrl-Enter)"))
	deadline := time.Now().Add(b.step)
	for {
		got := b.editorText(responseEditor)
		if strings.Contains(got, want) {
			return got
		}
		if time.Now().After(deadline) {
			b.shot("failed-run-query")
			b.t.Fatalf("the response never showed %q; it shows:\n%s", want, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func docLink(class, name string) string {
	return `//a[contains(@class, "graphiql-doc-explorer-` + class + `") and normalize-space()=` + xp(name) + `]`
}

// TestUIPlayground: the GraphQL playground at /graphql/playground works
// with nothing reachable but the server (the page, its scripts, styles and
// fonts all come from the binary): it loads, its schema docs are
// browsable, a query runs with an Authorization header typed into it (and
// without one as nobody), the header is not kept where page scripts can
// read it, and a user signed in to the UI runs queries as themselves.
func TestUIPlayground(t *testing.T) {
	requireChromium(t)
	s := newServer(t)
	s.graphql(t, `mutation { createNamespace(input: {slug: "acme"}) { namespace { id } } }`, nil)
	s.graphql(t, `mutation { createRepository(input: {namespace: "acme", name: "libs", format: MAVEN}) { repository { id } } }`, nil)

	b := newBrowser(t, s.URL, 1280, 900)
	defer b.checkConsole()
	blocked, passed := b.offline(s.URL)
	defer func() {
		if l := blocked(); len(l) > 0 {
			t.Errorf("the playground requested %d URLs off the server: %v", len(l), l)
		}
	}()

	// Signed out: the page says how to authenticate and shows the
	// header editor, where the token goes.
	b.open("/graphql/playground")
	b.see(`//*[contains(@class, "graphiql-container")]`)
	b.see(text("Not signed in"))
	b.see(headersEditor)
	if l := blocked(); len(l) > 0 {
		t.Fatalf("the page requested URLs off the server: %v", l)
	}

	// The schema's docs: root types, a type's fields, a field's type
	// with its description.
	b.click(button("Show Documentation Explorer"))
	b.see(text("Root Types"))
	b.click(docLink("type-name", "Query"))
	b.see(docLink("field-name", "namespaces"))
	b.see(docLink("field-name", "viewer"))
	b.click(docLink("field-name", "namespaces"))
	b.see(text("All namespaces (admin token only)"))
	b.click(docLink("type-name", "NamespaceConnection"))
	b.see(docLink("field-name", "totalCount"))

	// GraphiQL's dialogs lock the page's scroll while open, with rules the
	// CSP lets in (checkConsole fails on a refused inline style).
	b.click(button("Open settings dialog"))
	b.see(`//*[@role="dialog"]//*[normalize-space()="Settings"]`)
	b.waitFor("the scroll lock", `getComputedStyle(document.body).overflow === "hidden"`)
	b.do("close the dialog", chromedp.KeyEvent(kb.Escape))
	b.gone(`//*[@role="dialog"]`)
	b.waitFor("the scroll lock released", `getComputedStyle(document.body).overflow !== "hidden"`)

	const query = "{\n  viewer { kind name }\n  namespaces(first: 5) {\n    totalCount\n    edges { node { slug } }\n  }\n}\n"
	b.setEditor(queryEditor, query)
	// Nobody: the admin-only field is refused.
	got := b.runQuery(`"UNAUTHENTICATED"`)
	if strings.Contains(got, `"acme"`) {
		t.Fatalf("anonymous query answered:\n%s", got)
	}
	// The admin token in the Authorization header.
	b.setEditor(headersEditor, `{"Authorization": "Bearer `+adminToken+`"}`)
	got = b.runQuery(`"acme"`)
	if !strings.Contains(got, `"kind": "ADMIN"`) || strings.Contains(got, `"errors"`) {
		t.Fatalf("query with the admin token answered:\n%s", got)
	}
	b.shot("60-playground-header")

	// GraphiQL keeps the query and its history, never the header.
	b.waitFor("the query history is saved", `(localStorage.getItem("graphiql:queries") || "").includes("namespaces(first: 5)")`)
	time.Sleep(700 * time.Millisecond) // GraphiQL saves editors 500 ms after a change
	b.noSecretReadable(adminToken)
	b.open("/graphql/playground")
	b.see(queryEditor)
	if h := b.editorText(headersEditor); strings.Contains(h, adminToken) {
		t.Fatalf("the header editor kept the token after a reload: %s", h)
	}
	b.noSecretReadable(adminToken)

	// Signed in to the UI: the session cookie and its CSRF token, no
	// header.
	b.open("/sign-in")
	b.typeInto("#token", adminToken)
	b.click(button("Sign in"))
	b.see(text("Signed in as admin"))
	b.open("/graphql/playground")
	b.see(text("Signed in as admin;"))
	b.setEditor(queryEditor, query)
	if h := b.editorText(headersEditor); strings.TrimSpace(h) != "" {
		t.Fatalf("header editor: %q", h)
	}
	got = b.runQuery(`"acme"`)
	if !strings.Contains(got, `"kind": "ADMIN"`) || strings.Contains(got, `"errors"`) {
		t.Fatalf("query as the signed-in user answered:\n%s", got)
	}
	b.click(button("Show Documentation Explorer"))
	b.click(docLink("type-name", "Query"))
	b.see(docLink("field-name", "namespaces"))
	b.docShot("61-playground", "playground")
	b.noSecretReadable(adminToken)

	var api, assets int
	for _, u := range passed() {
		switch {
		case strings.HasSuffix(u, "/graphql"):
			api++
		case strings.Contains(u, "/assets/"):
			assets++
		}
	}
	if api == 0 || assets == 0 {
		t.Fatalf("the interception saw %d API and %d asset requests: it did not see the page", api, assets)
	}
}

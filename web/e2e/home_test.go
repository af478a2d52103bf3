package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
)

// TestUIHome: after sign-in the admin's home lists the namespaces with
// their status, repository count and storage, 50 per page with "Load
// more", narrowed by a slug prefix and sorted by creation; a namespace
// token lands on its namespace instead.
func TestUIHome(t *testing.T) {
	requireChromium(t)
	s := newServer(t)
	// 55 namespaces: a second page. acme has repositories and an image,
	// acme-staging is suspended.
	var q strings.Builder
	q.WriteString("mutation {")
	for i := range 52 {
		fmt.Fprintf(&q, ` n%d: createNamespace(input: {slug: "team-%02d"}) { namespace { id } }`, i, i)
	}
	q.WriteString(` a: createNamespace(input: {slug: "acme"}) { namespace { id } }`)
	q.WriteString(` s: createNamespace(input: {slug: "acme-staging"}) { namespace { id } }`)
	q.WriteString(` b: createNamespace(input: {slug: "beta"}) { namespace { id } } }`)
	s.graphql(t, q.String(), nil)
	s.createRepositories(t, "acme", "svc", 4, "DOCKER")
	s.createRepositories(t, "acme-staging", "svc", 1, "NPM")
	s.graphql(t, `mutation { setNamespaceCondition(slug: "acme-staging", condition: SUSPENDED, active: true) { namespace { id } } }`, nil)
	s.pushImage(t, "acme/svc-0000/api", "v1", []byte(strings.Repeat("a layer of the api image ", 400)))
	// Fold the storage deltas of the push, as the periodic counter job does.
	var acme struct {
		Namespace struct{ ID string } `json:"namespace"`
	}
	if err := json.Unmarshal(s.graphql(t, `{ namespace(slug: "acme") { id } }`, nil), &acme); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.FoldCounterDeltas(context.Background(), uuid.MustParse(acme.Namespace.ID), 1000, 10); err != nil {
		t.Fatal(err)
	}
	var tok struct {
		Read  struct{ Secret string } `json:"read"`
		Admin struct{ Secret string } `json:"admin"`
	}
	if err := json.Unmarshal(s.graphql(t, `mutation {
		read: createAccessToken(input: {namespace: "acme", name: "ci", scopes: [READ]}) { secret }
		admin: createAccessToken(input: {namespace: "acme", name: "ops", scopes: [ADMIN]}) { secret } }`, nil), &tok); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, s.URL, 1280, 900)
	defer b.checkConsole()
	step := func(name string, f func(t *testing.T)) bool {
		return t.Run(name, func(t *testing.T) {
			defer b.failOn(t)()
			f(t)
		})
	}
	must := func(name string, f func(t *testing.T)) {
		if !step(name, f) {
			t.FailNow()
		}
	}
	row := func(slug string) string { return `//tr[@data-namespace=` + xp(slug) + `]` }

	must("admin home lists namespaces", func(t *testing.T) {
		b.open("/sign-in")
		b.typeInto("#token", adminToken)
		b.click(button("Sign in"))
		b.see(heading("Namespaces"))
		b.see(text("50 of 55 shown"))
		if n := b.count("tbody tr[data-namespace]"); n != 50 {
			t.Errorf("first page: %d namespaces, want 50", n)
		}
		// By slug: acme first, its repositories linked, its storage counted.
		b.waitFor("acme first", `document.querySelector("tbody tr[data-namespace]")?.dataset.namespace === "acme"`)
		b.see(row("acme") + `//td[@data-label="Repositories"]//a[normalize-space()="4"]`)
		b.see(row("acme-staging") + `//*[normalize-space()="suspended"]`)
		// The pushed layer, config and manifest, each counted once.
		b.see(row("acme") + `//td[@data-label="Storage"][normalize-space()!="0 B"]`)
		b.docShot("40-home", "home-namespaces")
		b.click(button("Load more"))
		b.see(text("All 55 shown."))
		if n := b.count("tbody tr[data-namespace]"); n != 55 {
			t.Errorf("after load more: %d namespaces, want 55", n)
		}
	})

	step("search by slug prefix and sort, in the URL", func(t *testing.T) {
		b.typeInto("#ns-search", "Acme")
		b.waitFor("search in the URL", `location.search === "?q=acme"`)
		b.see(text("All 2 shown."))
		if n := b.count("tbody tr[data-namespace]"); n != 2 {
			t.Errorf("search acme: %d namespaces, want 2", n)
		}
		b.choose("#ns-sort", "newest")
		b.waitFor("order in the URL", `location.search === "?q=acme&sort=newest"`)
		// acme-staging was created after acme.
		b.waitFor("newest first", `document.querySelector("tbody tr[data-namespace]")?.dataset.namespace === "acme-staging"`)
		b.open("/?q=zzz")
		b.see(text("No namespace slug starts with"))
		b.click(button("Clear search"))
		b.waitFor("search cleared", `location.search === ""`)
		b.see(text("50 of 55 shown"))
	})

	step("repository count opens the namespace's repositories", func(t *testing.T) {
		b.click(row("acme") + `//td[@data-label="Repositories"]//a`)
		b.see(heading("Repositories"))
		b.see(text("All 4 shown."))
	})

	must("a namespace token lands on its namespace", func(t *testing.T) {
		// An ADMIN token on the overview, a READ token on the repositories
		// it may read; the home itself sends it there too.
		for _, c := range []struct{ secret, path, see string }{
			{tok.Admin.Secret, "/n/acme", text("Garbage collection")},
			{tok.Read.Secret, "/n/acme/repositories", link("svc-0000")},
		} {
			b.click(button("Sign out"))
			b.open("/sign-in")
			b.typeInto("#token", c.secret)
			b.click(button("Sign in"))
			b.waitFor("landed on "+c.path, `location.pathname === `+jsString(c.path))
			b.see(c.see)
			b.open("/")
			b.waitFor("home sends it to "+c.path, `location.pathname === `+jsString(c.path))
			b.see(c.see)
			if strings.Contains(b.eval(`document.body.innerText`), "Not allowed") {
				t.Errorf("%s shows a refusal to the token", c.path)
			}
		}
	})

	step("narrow home does not overflow", func(t *testing.T) {
		b.click(button("Sign out"))
		b.open("/sign-in")
		b.typeInto("#token", adminToken)
		b.click(button("Sign in"))
		b.see(heading("Namespaces"))
		b.do("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
		b.open("/")
		b.see(row("acme"))
		b.waitFor("no horizontal overflow", `document.documentElement.scrollWidth <= window.innerWidth + 1`)
		b.docShot("41-narrow-home", "narrow-home")
	})
}

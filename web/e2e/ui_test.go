package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/artifact-registry/artifact-registry/store"
)

// TestRoutingPriority: the protocol, API and ops routes keep their
// answers with the UI mounted as the catch-all, and missing build files
// are real 404s.
func TestRoutingPriority(t *testing.T) {
	s := newServer(t)
	get := func(path string, hdr ...string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	isUI := func(body string) bool { return strings.Contains(body, `<div id="root">`) }

	for _, p := range []string{"/", "/sign-in", "/n/acme/repositories?sort=size", "/n/acme/r/app/images/team/api"} {
		resp, body := get(p)
		if resp.StatusCode != http.StatusOK || !isUI(body) {
			t.Errorf("%s: %s, UI=%v", p, resp.Status, isUI(body))
		}
	}
	cases := []struct {
		path   string
		status int
	}{
		{"/v2/", http.StatusUnauthorized}, // OCI base check wants credentials
		{"/-/health", http.StatusOK},      // ops
		{"/metrics", http.StatusOK},       // ops
		{"/assets/index-missing.js", http.StatusNotFound},
		{"/favicon.ico", http.StatusNotFound},
	}
	for _, c := range cases {
		resp, body := get(c.path)
		if resp.StatusCode != c.status || isUI(body) {
			t.Errorf("%s: %s (want %d), UI=%v", c.path, resp.Status, c.status, isUI(body))
		}
	}
	// npm and Maven answer in their own formats, even for unknown names.
	for _, p := range []string{"/npm/acme/web/left-pad", "/maven/acme/libs/com/example/x/1.0/x-1.0.jar"} {
		resp, body := get(p, "Authorization", "Bearer "+adminToken)
		if resp.StatusCode == http.StatusOK || isUI(body) {
			t.Errorf("%s: %s, UI=%v", p, resp.Status, isUI(body))
		}
	}
	// GraphQL answers GET too.
	resp, body := get("/graphql?query=%7Bnamespaces(first%3A1)%7BtotalCount%7D%7D", "Authorization", "Bearer "+adminToken)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "totalCount") {
		t.Errorf("GET /graphql: %s %s", resp.Status, body)
	}
}

// TestUI walks through the UI as a person would: sign in, create a
// namespace and repositories, see them listed and filtered, load more,
// open an image pushed over the OCI API, copy its pull command, delete a
// tag, move a manifest to the trash and restore it, delete and restore a
// repository, read the publish history and search by digest, on a wide
// and a narrow window. Screenshots go to artifactsDir.
func TestUI(t *testing.T) {
	requireChromium(t)
	s := newServer(t)
	b := newBrowser(t, s.URL, 1280, 900)
	defer b.checkConsole()
	// step runs one step as a subtest, b's helpers failing that subtest;
	// must runs a step the later ones build on (the page it leaves, what
	// it creates): they stop when it fails.
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

	// Signed out: the start page offers sign-in.
	must("signed out start page offers sign-in", func(t *testing.T) {
		b.open("/")
		b.see(heading("Artifact Registry"))
		b.shot("01-start-signed-out")
	})

	// A wrong token is refused with the meaning of UNAUTHENTICATED.
	step("wrong token refused", func(t *testing.T) {
		b.click(link("Sign in with a token"))
		b.see(heading("Sign in"))
		b.typeInto("#token", "not-the-token")
		b.click(button("Sign in"))
		b.see(text("Sign-in required"))
		b.see(text("The token was not accepted"))
		b.shot("02-sign-in-refused")
	})

	must("sign in", func(t *testing.T) {
		b.open("/sign-in?next=%2F")
		b.typeInto("#token", adminToken)
		b.click(button("Sign in"))
		b.see(heading("Namespaces"))
		b.noSecretReadable(adminToken)
		b.see(text("No namespace yet"))
	})

	// Create a namespace from the UI.
	must("create namespace", func(t *testing.T) {
		b.click(`//summary[normalize-space()="Create namespace"]`)
		b.typeInto("#ns-slug", "acme")
		b.click(button("Create"))
		b.see(heading("acme"))
		b.see(text("Garbage collection"))
	})

	// Create a repository from the UI.
	must("create repository", func(t *testing.T) {
		b.click(link("Create repository"))
		b.see(heading("Create repository"))
		b.typeInto("#repo-name", "app")
		b.typeInto("#repo-description", "Application images")
		b.docShot("03-create-repository", "create-repository")
		b.click(button("Create repository"))
		b.see(heading("app"))
		b.see(text("No image yet"))
		b.see(text("docker login " + s.Host))
	})

	// An existing name is refused with ALREADY_EXISTS's meaning.
	step("existing repository name refused", func(t *testing.T) {
		b.open("/n/acme/repositories/new")
		b.typeInto("#repo-name", "app")
		b.click(button("Create repository"))
		b.see(text("Already exists"))
	})

	// More repositories through the API, to fill the list past one page.
	// Push an image over the OCI API: two manifests, three tags.
	var m1, layer1, m2 string
	must("fill through the API", func(t *testing.T) {
		s.createRepositories(t, "acme", "svc", 55, "DOCKER")
		s.createRepositories(t, "acme", "pkg", 5, "NPM")
		s.createRepositories(t, "acme", "lib", 3, "MAVEN")
		m1, layer1 = s.pushImage(t, "acme/app/team/api", "v1", []byte("layer one of the api image"))
		m2, _ = s.pushImage(t, "acme/app/team/api", "v2", []byte("layer two of the api image, a bit longer"))
		s.tagManifest(t, "acme/app/team/api", m2, "latest")
		s.pushImage(t, "acme/app/worker", "1.0", []byte("worker layer"))
		// The periodic counter flush is not part of this server: apply what
		// it would, so the size order has something to sort.
		now := time.Now()
		s.mergeCounters(t, "acme", "app", store.RepositoryCounterDelta{ArtifactsCount: 3, SizeBytes: 2048, DownloadsCount: 7, LastUpdatedAt: &now})
	})

	// The repository list: 64 repositories, 50 per page.
	must("repository list pages", func(t *testing.T) {
		b.open("/n/acme/repositories")
		b.see(link("app"))
		b.see(text("50 of 64 shown"))
		if n := b.count("tbody th a"); n != 50 {
			t.Errorf("first page shows %d repositories, want 50", n)
		}
		b.docShot("04-repository-list", "repository-list")
		b.click(button("Load more"))
		b.see(text("All 64 shown."))
		if n := b.count("tbody th a"); n != 64 {
			t.Errorf("after load more: %d repositories, want 64", n)
		}
	})

	// Filters and order live in the URL.
	step("filters and order live in the URL", func(t *testing.T) {
		b.choose("#f-format", "NPM")
		b.waitFor("npm filter in the URL", `location.search === "?format=npm"`)
		b.see(link("pkg-0004"))
		b.see(text("All 5 shown."))
		if n := b.count("tbody th a"); n != 5 {
			t.Errorf("npm filter: %d repositories, want 5", n)
		}
		b.choose("#f-visibility", "PUBLIC")
		b.waitFor("visibility filter", `location.search === "?format=npm&visibility=public"`)
		b.see(text("All 2 shown."))
		b.click(button("Clear filters"))
		b.waitFor("filters cleared", `location.search === ""`)
		// The URL changes before React renders the cleared filters; a change
		// made in between would carry the old ones, so wait for the form.
		b.waitFor("filters cleared in the form", `document.querySelector("#f-format").value === "" && document.querySelector("#f-visibility").value === ""`)
		b.choose("#f-sort", "SIZE")
		b.waitFor("size order", `location.search === "?sort=size"`)
		b.see(text("50 of 64 shown"))
		// app holds the pushed bytes: biggest first.
		b.waitFor("app sorted first by size", `document.querySelector("tbody th a")?.textContent === "app"`)
		b.shot("05-repository-list-by-size")
	})

	// A shared link opens the same filtered list.
	step("shared link opens the filtered list", func(t *testing.T) {
		b.open("/n/acme/repositories?format=maven&sort=name&dir=desc")
		b.waitFor("maven list descending", `document.querySelector("tbody th a")?.textContent === "lib-0002"`)
		b.see(text("All 3 shown."))
	})

	// Repository detail → image → tags and manifests.
	must("repository detail to image tags and manifests", func(t *testing.T) {
		b.open("/n/acme/repositories")
		b.click(link("app"))
		b.see(heading("app"))
		b.see(link("team/api"))
		b.see(link("worker"))
		b.docShot("06-repository-detail", "container-repository")
		b.click(link("team/api"))
		b.see(heading("team/api"))
		b.see(`//tr[@data-tag="v1"]`)
		b.see(`//tr[@data-tag="latest"]`)
		b.shot("07-image-tags-manifests")
	})

	// Copy the pull command of v1.
	step("copy pull command", func(t *testing.T) {
		want := "docker pull " + s.Host + "/acme/app/team/api:v1"
		b.click(`//tr[@data-tag="v1"]//button[normalize-space()="Copy pull"]`)
		b.see(`//tr[@data-tag="v1"]//button[normalize-space()="Copied"]`)
		clip := run(b, "read clipboard", chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
		if clip != want {
			t.Errorf("clipboard: %q, want %q", clip, want)
		}
	})

	// Open a manifest: full digest, docker and oras pull by digest.
	must("manifest detail", func(t *testing.T) {
		b.click(`//tr[@data-tag="v2"]//a[contains(@class, "mono")]`)
		b.waitFor("manifest in the URL", `new URLSearchParams(location.search).get("manifest") === `+jsString(m2))
		b.see(text(m2))
		b.see(text("docker pull " + s.Host + "/acme/app/team/api@" + m2))
		b.see(text("oras pull --plain-http " + s.Host + "/acme/app/team/api@" + m2))
		b.shot("08-manifest-detail")
	})

	// Delete tag v1: the manifest stays, untagged.
	must("delete tag keeps the manifest", func(t *testing.T) {
		b.click(button("Delete tag v1"))
		b.gone(`//tr[@data-tag="v1"]`)
		b.see(`//tr[@data-tag="v2"]`)
	})

	// Move manifest m1 to the trash, then restore it from the trash.
	must("manifest to trash and restore", func(t *testing.T) {
		b.open("/n/acme/r/app/images/team/api?manifest=" + m1)
		b.see(text(m1))
		b.click(button("Move manifest to trash"))
		b.waitFor("manifest gone from the image", `!document.body.innerText.includes(`+jsString(m1[:19])+`)`)
		b.click(link("Trash"))
		b.see(heading("Trash"))
		b.see(text(m1[:19]))
		b.waitFor("the trash ends with its last item", lastRowFilled)
		b.docShot("09-trash", "trash")
		b.click(button("Restore manifest " + m1[:19]))
		b.see(text("The trash is empty."))
		b.open("/n/acme/r/app/images/team/api")
		b.see(text(m1[:19]))
	})

	// Delete a repository to the trash and restore it.
	must("repository to trash and restore", func(t *testing.T) {
		b.open("/n/acme/r/svc-0007")
		b.click(button("Move to trash"))
		b.see(heading("Repositories"))
		b.see(text("50 of 63 shown"))
		b.open("/n/acme/trash?kind=repository")
		b.see(text("svc-0007"))
		b.click(button("Restore repository svc-0007"))
		b.see(text("The trash is empty."))
		b.open("/n/acme/r/svc-0007")
		b.see(heading("svc-0007"))
	})

	// Publish history and checksum search.
	step("publish history", func(t *testing.T) {
		b.open("/n/acme/history")
		b.see(heading("Publish history"))
		b.see(text(m2[:19]))
		b.waitFor("the history ends with its last event", lastRowFilled)
		b.docShot("10-publish-history", "publish-history")
	})
	step("checksum search", func(t *testing.T) {
		b.open("/n/acme/search")
		b.typeInto("#sha", layer1)
		b.click(button("Search"))
		b.waitFor("search in the URL", `location.search.includes("sha256=")`)
		b.see(`//table[@aria-label="Matches"]//a[normalize-space()="app"]`)
		b.docShot("11-checksum-search", "checksum-search")
	})

	// Overview: storage and components counted.
	step("namespace overview", func(t *testing.T) {
		b.open("/n/acme")
		b.see(text("Garbage collection"))
		b.docShot("12-namespace-overview", "namespace-overview")
	})

	// Errors: an unknown namespace and repository say so.
	step("unknown repository", func(t *testing.T) {
		b.open("/n/acme/r/nothing")
		b.see(heading("Repository not found"))
	})
	step("unknown namespace", func(t *testing.T) {
		b.open("/n/nope/repositories")
		b.see(text("Not found"))
		b.see(text(`namespace "nope" not found`))
	})
	step("unknown image", func(t *testing.T) {
		b.open("/n/acme/r/app/images/does/not/exist")
		b.see(text("There is no image"))
	})
	step("unknown page", func(t *testing.T) {
		b.open("/no/such/screen")
		b.see(heading("Page not found"))
	})

	// Purge from the trash: one repository after confirmation, then the
	// rest with "Empty trash"; each item says when it expires.
	step("purge and empty the trash", func(t *testing.T) {
		for _, name := range []string{"svc-0008", "svc-0009"} {
			b.open("/n/acme/r/" + name)
			b.click(button("Move to trash"))
			b.see(heading("Repositories"))
		}
		b.open("/n/acme/trash?kind=repository")
		b.see(text("purged 7 days after deletion"))
		b.see(text("svc-0009"))
		b.click(button("Purge repository svc-0009"))
		b.gone(text("svc-0009"))
		b.see(text("svc-0008"))
		b.click(button("Empty trash"))
		b.see(text("Purged 1 item."))
		b.see(text("The trash is empty."))
	})

	// Keyboard: "/" focuses the search field; Tab reaches the skip link first.
	step("slash focuses the search field", func(t *testing.T) {
		b.open("/n/acme/search")
		b.see(heading("Checksum search"))
		b.do("press /", chromedp.KeyEvent("/"))
		b.waitFor("search focused", `document.activeElement?.id === "sha"`)
	})
	step("tab reaches the skip link first", func(t *testing.T) {
		b.open("/n/acme/repositories")
		b.see(link("app"))
		b.do("press Tab", chromedp.KeyEvent("\t"))
		b.waitFor("skip link focused", `document.activeElement?.classList.contains("skip-link")`)
	})

	// Sign out: the token is gone, private data is not shown.
	must("sign out", func(t *testing.T) {
		b.click(button("Sign out"))
		b.see(link("Sign in with a token"))
		b.noSecretReadable(adminToken)
	})
	// Anonymous callers see public repositories only.
	step("anonymous callers see public repositories only", func(t *testing.T) {
		b.open("/n/acme/repositories")
		b.see(link("svc-0000")) // PUBLIC
		b.gone(link("app"))     // PRIVATE
		b.shot("13-anonymous-public-list")
	})
}

// lastRowFilled holds when the page's table ends with a row that shows
// something: a list's last page once ended with an empty row.
const lastRowFilled = `(() => {
	const rows = [...document.querySelectorAll("table tbody tr")];
	return rows.length > 0 && rows.every((r) => r.innerText.trim() !== "");
})()`

// failOn points b's helpers at t, a subtest of b's test, until the
// returned func restores the test they failed before.
func (b *tab) failOn(t testing.TB) (restore func()) {
	old := b.t
	b.t = t
	return func() { b.t = old }
}

// TestUINarrow checks the main screens on a phone-sized window: tables
// become stacked cards and nothing overflows horizontally.
func TestUINarrow(t *testing.T) {
	requireChromium(t)
	s := newServer(t)
	s.graphql(t, `mutation { createNamespace(input: {slug: "acme"}) { namespace { id } } }`, nil)
	s.createRepositories(t, "acme", "svc", 8, "DOCKER")
	s.pushImage(t, "acme/svc-0001/api", "v1", []byte("narrow layer"))

	b := newBrowser(t, s.URL, 500, 844)
	defer b.checkConsole()
	// A phone's viewport (windows are at least 500 px wide).
	b.do("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	b.open("/sign-in")
	b.typeInto("#token", adminToken)
	b.click(button("Sign in"))
	b.see(heading("Namespaces"))

	noOverflow := `document.documentElement.scrollWidth <= window.innerWidth + 1`
	for _, p := range []struct{ path, see, name string }{
		{"/n/acme/repositories", link("svc-0001"), "20-narrow-repository-list"},
		{"/n/acme", text("Garbage collection"), "21-narrow-overview"},
		{"/n/acme/r/svc-0001/images/api", `//tr[@data-tag="v1"]`, "22-narrow-image"},
	} {
		b.open(p.path)
		b.see(p.see)
		b.waitFor("no horizontal overflow on "+p.path, noOverflow)
		b.docShot(p.name, p.name[3:])
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

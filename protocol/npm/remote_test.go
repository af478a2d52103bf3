package npm

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestNpmRemoteProtocol: the wire behaviour of a pull-through cache
// without the CLI: tarball before packument, scoped names in both forms,
// abbreviated documents with their own ETag and Vary, our 304s, a
// tarball that does not match its integrity refused and not cached,
// writes refused with npm's error body, search passthrough, bad input.
func TestNpmRemoteProtocol(t *testing.T) {
	e := newEnv(t, envOptions{})
	up := newFakeRegistry(t)
	up.publish("plain", "1.0.0", nil, map[string]any{"scripts": map[string]string{"postinstall": "node x.js"}})
	up.publish("@sc/lib", "2.0.0", nil, nil)
	up.publish("broken", "1.0.0", nil, nil)
	up.corrupt["broken-1.0.0.tgz"] = true
	e.addRemote(t, "up", up.url, 1)
	reg := e.registry("up")

	// Tarball before its packument.
	st, body, _ := e.do("GET", reg+"@sc/lib/-/lib-2.0.0.tgz", "", nil, nil)
	if st != http.StatusOK || len(body) < 20 {
		t.Fatalf("tarball before packument: %d %s", st, body)
	}
	e.waitCount(t, `SELECT count(*) FROM npm_remote_files`, 1)
	// Scoped packument, %2f and / forms, full and abbreviated.
	for _, p := range []string{"@sc%2flib", "@sc%2Flib", "@sc/lib"} {
		st, body, hdr := e.do("GET", reg+p, "", nil, nil)
		if st != http.StatusOK || hdr.Get("Vary") != "Accept" || !strings.Contains(string(body), `"tarball":"`+reg+`@sc/lib/-/lib-2.0.0.tgz"`) {
			t.Fatalf("GET %s: %d %v %s", p, st, hdr, body)
		}
	}
	st, full, fh := e.do("GET", reg+"plain", "", nil, nil)
	st2, corgi, ch := e.do("GET", reg+"plain", "", nil, map[string]string{"Accept": mediaTypeCorgi})
	if st != 200 || st2 != 200 || fh.Get("ETag") == ch.Get("ETag") || !strings.HasPrefix(ch.Get("Content-Type"), mediaTypeCorgi) {
		t.Fatalf("full %d %v / corgi %d %v", st, fh, st2, ch)
	}
	if !strings.Contains(string(full), `"readme"`) || strings.Contains(string(corgi), `"readme"`) ||
		!strings.Contains(string(corgi), `"hasInstallScript":true`) || strings.Contains(string(full), up.url) || strings.Contains(string(full), `"_rev"`) {
		t.Fatalf("documents: full %s\ncorgi %s", full, corgi)
	}
	if st, _, _ := e.do("GET", reg+"plain", "", nil, map[string]string{"If-None-Match": fh.Get("ETag")}); st != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", st)
	}
	// Corrupt upstream tarball: the connection is cut, nothing cached.
	req, _ := http.NewRequest("GET", reg+"broken/-/broken-1.0.0.tgz", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_, rerr := readAllErr(resp)
		if rerr == nil {
			t.Fatal("a tarball that does not match its integrity was served whole")
		}
	}
	if n := e.count(`SELECT count(*) FROM npm_remote_versions WHERE version = '1.0.0' AND package_json->>'name' = 'broken'`); n != 0 {
		t.Fatalf("a corrupt tarball was cached")
	}
	// Writes refused with npm's error body.
	for _, w := range []struct{ method, path string }{
		{"PUT", "plain"}, {"DELETE", "plain/-rev/1-a"}, {"PUT", "-/package/plain/dist-tags/beta"}, {"DELETE", "plain/-/plain-1.0.0.tgz/-rev/1"},
	} {
		st, body, _ := e.do(w.method, reg+w.path, "token", []byte(`"1.0.0"`), nil)
		var eb map[string]string
		if st != http.StatusMethodNotAllowed || json.Unmarshal(body, &eb) != nil || !strings.Contains(eb["error"], "remote repository") {
			t.Fatalf("%s %s: %d %s", w.method, w.path, st, body)
		}
	}
	// Anonymous write: authorization first (401), not the refusal.
	if st, _, _ := e.do("PUT", reg+"plain", "", []byte(`{}`), nil); st != http.StatusUnauthorized {
		t.Fatalf("anonymous PUT on a remote: %d", st)
	}
	// Search passthrough, dist-tags, a version by tag.
	if st, body, _ := e.do("GET", reg+"-/v1/search?text=plain&size=20", "", nil, nil); st != 200 || !strings.Contains(string(body), `"plain"`) {
		t.Fatalf("search: %d %s", st, body)
	}
	if st, body, _ := e.do("GET", reg+"-/package/@sc%2flib/dist-tags", "", nil, nil); st != 200 || string(body) != `{"latest":"2.0.0"}` {
		t.Fatalf("dist-tags: %d %s", st, body)
	}
	if st, body, _ := e.do("GET", reg+"plain/latest", "", nil, nil); st != 200 || !strings.Contains(string(body), `"version":"1.0.0"`) {
		t.Fatalf("version by tag: %d %s", st, body)
	}
	// Bad input.
	for _, p := range []string{"no-such-pkg", "plain/-/plain-9.9.9.tgz", "plain/-/..%2f..%2fetc.tgz", "-/v1/search?text=" + strings.Repeat("a", 3000)} {
		st, body, _ := e.do("GET", reg+p, "", nil, nil)
		var eb map[string]string
		if st < 400 || st >= 500 || json.Unmarshal(body, &eb) != nil || eb["error"] == "" {
			t.Fatalf("GET %s: %d %s", p, st, body)
		}
	}
	// A version the upstream drops is dropped from the cache once the
	// upstream says so (a fresh packument without it).
	up.publish("plain", "1.1.0", nil, nil)
	e.do("GET", reg+"plain/-/plain-1.0.0.tgz", "", nil, nil)
	e.waitCount(t, `SELECT count(*) FROM npm_remote_versions v JOIN npm_remote_packages p ON p.id = v.npm_remote_package_id WHERE p.name = 'plain'`, 1)
	up.unpublish("plain", "1.0.0")
	if _, err := e.npm.InvalidateRemoteMetadata(e.ctx, storeRef("up"), "plain"); err != nil {
		t.Fatal(err)
	}
	if st, body, _ := e.do("GET", reg+"plain", "", nil, nil); st != 200 || strings.Contains(string(body), `"1.0.0"`) {
		t.Fatalf("after the upstream dropped 1.0.0: %d %s", st, body)
	}
	if n := e.count(`SELECT count(*) FROM npm_remote_versions v JOIN npm_remote_packages p ON p.id = v.npm_remote_package_id WHERE p.name = 'plain'`); n != 0 {
		t.Fatalf("cached versions of plain after the upstream dropped 1.0.0: %d", n)
	}
	e.flushRemoteCounters()
}

// TestNpmRemoteConcurrentTarball: concurrent cold requests of one tarball
// make one upstream GET and one cached row (run with -race).
func TestNpmRemoteConcurrentTarball(t *testing.T) {
	e := newEnv(t, envOptions{})
	up := newFakeRegistry(t)
	up.publish("hot", "1.0.0", nil, nil)
	e.addRemote(t, "up", up.url, 1)
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(e.registry("up") + "hot/-/hot-1.0.0.tgz")
			if err != nil {
				errs <- err.Error()
				return
			}
			if _, err := readAllErr(resp); err != nil || resp.StatusCode != 200 {
				errs <- resp.Status
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	e.waitCount(t, `SELECT count(*) FROM npm_remote_files`, 1)
	if n := up.countRequests("GET /hot/-/"); n != 1 {
		t.Fatalf("%d upstream tarball GETs, want 1", n)
	}
	if n := up.countRequests("GET /hot"); n != 2 {
		t.Fatalf("%d upstream GETs (packument + tarball), want 2", n)
	}
	e.flushRemoteCounters()
}

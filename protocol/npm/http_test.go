package npm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/internal/testsupport/npmpack"
	"github.com/artifact-registry/artifact-registry/protocol/npm/npmname"
)

// TestPublishAndRead covers the basic cycle over raw HTTP: publish,
// packument (full and corgi, ETag/304), tarball, dist-tags file.
func TestPublishAndRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	reg := e.registry("js")

	e.publish("js", npmpack.NewPublish(t, "demo", "1.0.0", map[string]any{"dependencies": map[string]string{"left-pad": "^1.0.0"}}))
	e.publish("js", npmpack.NewPublish(t, "demo", "1.1.0", nil))
	scoped := npmpack.NewPublish(t, "@anchor/lib", "1.0.0", map[string]any{"scripts": map[string]string{"postinstall": "node x.js"}})
	e.publish("js", scoped)

	full := e.packument("js", "demo", false)
	if full["_id"] != "demo" || full["name"] != "demo" || !strings.Contains(full["_rev"].(string), "-") {
		t.Fatalf("full document envelope: %v", full)
	}
	tags := full["dist-tags"].(map[string]any)
	if tags["latest"] != "1.1.0" {
		t.Errorf("latest = %v, want 1.1.0", tags["latest"])
	}
	versions := full["versions"].(map[string]any)
	v1 := versions["1.0.0"].(map[string]any)
	dist := v1["dist"].(map[string]any)
	if dist["tarball"] != reg+"demo/-/demo-1.0.0.tgz" {
		t.Errorf("tarball URL = %v", dist["tarball"])
	}
	if _, ok := v1["readme"]; ok {
		t.Errorf("versions carry readme")
	}
	if full["readme"] != "# demo" || full["description"] != "test package demo" || full["license"] != "MIT" {
		t.Errorf("hoisted fields: readme=%v description=%v license=%v", full["readme"], full["description"], full["license"])
	}
	tm := full["time"].(map[string]any)
	for _, k := range []string{"created", "modified", "1.0.0", "1.1.0"} {
		if _, ok := tm[k]; !ok {
			t.Errorf("time has no %q: %v", k, tm)
		}
	}
	if m := full["maintainers"].([]any); len(m) != 1 || m[0].(map[string]any)["name"] != "admin" {
		t.Errorf("maintainers = %v", full["maintainers"])
	}

	corgi := e.packument("js", "@anchor/lib", true)
	for k := range corgi {
		if !slices.Contains([]string{"name", "modified", "dist-tags", "versions"}, k) {
			t.Errorf("corgi top-level field %q", k)
		}
	}
	cv := corgi["versions"].(map[string]any)["1.0.0"].(map[string]any)
	for k := range cv {
		if !slices.Contains(abbreviatedFields, k) {
			t.Errorf("corgi version field %q", k)
		}
	}
	if cv["hasInstallScript"] != true || cv["_hasShrinkwrap"] != false {
		t.Errorf("install hints: %v", cv)
	}
	if cv["dist"].(map[string]any)["tarball"] != reg+"@anchor/lib/-/lib-1.0.0.tgz" {
		t.Errorf("scoped tarball URL = %v", cv["dist"])
	}

	// ETag and 304.
	status, _, hdr := e.do(http.MethodGet, reg+"demo", "token", nil, nil)
	etag := hdr.Get("ETag")
	if status != http.StatusOK || etag == "" {
		t.Fatalf("GET: %d etag %q", status, etag)
	}
	status, body, _ := e.do(http.MethodGet, reg+"demo", "token", nil, map[string]string{"If-None-Match": etag})
	if status != http.StatusNotModified || len(body) != 0 {
		t.Errorf("If-None-Match: %d %s", status, body)
	}

	// The three scoped-name spellings.
	for _, p := range []string{"@anchor%2flib", "@anchor%2Flib", "@anchor/lib"} {
		if status, body, _ := e.do(http.MethodGet, reg+p, "", nil, nil); status != http.StatusOK {
			t.Errorf("GET %s: %d %s", p, status, body)
		}
	}

	// Tarballs.
	status, body, hdr = e.do(http.MethodGet, reg+"@anchor/lib/-/lib-1.0.0.tgz", "", nil, nil)
	if status != http.StatusOK || !slices.Equal(body, scoped.Tarball) || hdr.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("tarball GET: %d %d bytes %q", status, len(body), hdr.Get("Content-Type"))
	}
	status, body, hdr = e.do(http.MethodHead, reg+"demo/-/demo-1.0.0.tgz", "", nil, nil)
	if status != http.StatusOK || len(body) != 0 || hdr.Get("Content-Length") == "" {
		t.Errorf("tarball HEAD: %d %q", status, hdr.Get("Content-Length"))
	}
	if status, _, _ := e.do(http.MethodGet, reg+"demo/-/demo-9.9.9.tgz", "", nil, nil); status != http.StatusNotFound {
		t.Errorf("missing tarball: %d", status)
	}

	// dist-tags file.
	status, body, _ = e.do(http.MethodGet, reg+"-/package/demo/dist-tags", "token", nil, nil)
	var dt map[string]string
	if status != http.StatusOK || json.Unmarshal(body, &dt) != nil || dt["latest"] != "1.1.0" {
		t.Errorf("dist-tags: %d %s", status, body)
	}

	// Unknown package.
	status, body, _ = e.do(http.MethodGet, reg+"no-such-pkg", "", nil, nil)
	if status != http.StatusNotFound || !strings.Contains(string(body), `"error":"no such package available"`) {
		t.Errorf("unknown package: %d %s", status, body)
	}
}

// nothingWritten fails when any npm row or blob exists.
func (e *env) nothingWritten(what string) {
	e.t.Helper()
	for _, table := range []string{"npm_packages", "npm_versions", "npm_files", "npm_tags", "npm_metadata_files", "blob_storage_blobs", "blob_storage_attachments", "upload_sessions"} {
		if n := e.count(`SELECT count(*) FROM ` + table); n != 0 {
			e.t.Errorf("%s: %s has %d rows", what, table, n)
		}
	}
}

func TestBadPublishes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{Options: Options{MaxTarballSize: 4096}})
	reg := e.registry("js")
	good := npmpack.NewPublish(t, "good", "1.0.0", nil)

	mutate := func(p *npmpack.Publish, f func(doc map[string]any)) []byte {
		var doc map[string]any
		_ = json.Unmarshal(p.Body(reg), &doc)
		f(doc)
		b, _ := json.Marshal(doc)
		return b
	}
	version := func(doc map[string]any) map[string]any {
		return doc["versions"].(map[string]any)["1.0.0"].(map[string]any)
	}
	big := npmpack.NewPublish(t, "big", "1.0.0", nil)
	big.Tarball = npmpack.Tarball(t, big.PkgJSON, map[string]string{"blob.bin": strings.Repeat("x", 1<<20)}) // compresses well
	big.Tarball = append(big.Tarball, make([]byte, 8192)...)                                                 // but not this

	cases := []struct {
		name   string
		path   string
		body   []byte
		status int
		text   string
	}{
		{"malformed JSON", "good", []byte(`{"name":"good","versions":{`), 400, "malformed JSON"},
		{"not an object", "good", []byte(`[1,2]`), 400, "malformed JSON"},
		{"two attachments", "good", mutate(good, func(d map[string]any) {
			a := d["_attachments"].(map[string]any)
			a["other-1.0.0.tgz"] = a["good-1.0.0.tgz"]
		}), 400, "exactly one attachment"},
		{"two versions", "good", mutate(good, func(d map[string]any) {
			v := d["versions"].(map[string]any)
			v["1.0.1"] = v["1.0.0"]
		}), 400, "exactly one version"},
		{"integrity mismatch", "good", mutate(good, func(d map[string]any) {
			version(d)["dist"].(map[string]any)["integrity"] = "sha512-" + strings.Repeat("A", 86) + "=="
		}), 400, "integrity mismatch"},
		{"shasum mismatch", "good", mutate(good, func(d map[string]any) {
			version(d)["dist"].(map[string]any)["shasum"] = strings.Repeat("0", 40)
		}), 400, "shasum mismatch"},
		{"no checksums", "good", mutate(good, func(d map[string]any) {
			version(d)["dist"] = map[string]any{"tarball": "x"}
		}), 400, "neither integrity nor shasum"},
		{"bad base64", "good", mutate(good, func(d map[string]any) {
			d["_attachments"].(map[string]any)["good-1.0.0.tgz"].(map[string]any)["data"] = "!!!"
		}), 400, "base64"},
		{"not a tarball", "good", func() []byte {
			p := npmpack.NewPublish(t, "good", "1.0.0", nil)
			p.Tarball = []byte("this is not gzip")
			return p.Body(reg)
		}(), 400, "gzip"},
		{"wrong length", "good", mutate(good, func(d map[string]any) {
			d["_attachments"].(map[string]any)["good-1.0.0.tgz"].(map[string]any)["length"] = 1
		}), 400, "length"},
		{"oversized tarball", "big", big.Body(reg), 413, "limit"},
		{"invalid version", "good", mutate(good, func(d map[string]any) {
			v := d["versions"].(map[string]any)
			v["1.0"] = v["1.0.0"]
			delete(v, "1.0.0")
		}), 400, "invalid version"},
		{"version mismatch", "good", mutate(good, func(d map[string]any) { version(d)["version"] = "1.0.1" }), 400, "version must be"},
		{"name mismatch", "other", good.Body(reg), 400, "does not match"},
		{"tag is a range", "good", mutate(good, func(d map[string]any) { d["dist-tags"] = map[string]any{"v1": "1.0.0"} }), 400, "SemVer range"},
		{"tag points elsewhere", "good", mutate(good, func(d map[string]any) { d["dist-tags"] = map[string]any{"latest": "0.9.0"} }), 400, "can only tag"},
		{"schema: dependencies not strings", "good", mutate(good, func(d map[string]any) {
			version(d)["dependencies"] = map[string]any{"x": 1}
		}), 400, "package.json"},
		{"uppercase name", "Upper", npmpack.NewPublish(t, "Upper", "1.0.0", nil).Body(reg), 400, "capital letters"},
		{"leading dot", ".dot", npmpack.NewPublish(t, ".dot", "1.0.0", nil).Body(reg), 400, "period"},
		{"leading dot in scope name", "@s%2f.dot", npmpack.NewPublish(t, "@s/.dot", "1.0.0", nil).Body(reg), 400, "period"},
		{"core module", "http", npmpack.NewPublish(t, "http", "1.0.0", nil).Body(reg), 400, "core module"},
		{"special characters", "a~b", npmpack.NewPublish(t, "a~b", "1.0.0", nil).Body(reg), 400, "special characters"},
		{"non URL-safe", "a%20b", npmpack.NewPublish(t, "a b", "1.0.0", nil).Body(reg), 400, "URL-friendly"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body, hdr := e.do(http.MethodPut, reg+c.path, "token", c.body, nil)
			var msg map[string]string
			if status != c.status || json.Unmarshal(body, &msg) != nil || !strings.Contains(msg["error"], c.text) {
				t.Errorf("%d %s, want %d with an error containing %q", status, body, c.status, c.text)
			}
			if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("content type %q", ct)
			}
			e.nothingWritten(c.name)
		})
	}

	// "../x": the root router cleans dot segments before any handler runs
	// (gorilla/mux redirects), so the request never reaches a publish.
	status, body, _ := e.do(http.MethodPut, reg+"..%2fx", "token", npmpack.NewPublish(t, "../x", "1.0.0", nil).Body(reg), nil)
	if status < 300 || status >= 500 {
		t.Errorf("PUT ../x: %d %s", status, body)
	}
	if err := npmname.Validate("../x"); err == nil {
		t.Errorf("npmname.Validate(../x) passed")
	}
	e.nothingWritten("../x")

	// Unauthenticated and wrong-token writes.
	if status, _, hdr := e.do(http.MethodPut, reg+"good", "", good.Body(reg), nil); status != 401 || hdr.Get("WWW-Authenticate") == "" {
		t.Errorf("anonymous publish: %d", status)
	}
	if status, _, _ := e.do(http.MethodPut, reg+"good", "wrong", good.Body(reg), nil); status != 401 {
		t.Errorf("wrong token publish: %d", status)
	}
	e.nothingWritten("unauthenticated")
	// A good publish still works after all that.
	e.publish("js", good)
}

// TestConcurrentPublishes: publishes of different versions of one package
// at once all land; publishes of the same version: one wins, the others get
// 409; nothing is left half-written.
func TestConcurrentPublishes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{maxConns: 16})
	reg := e.registry("js")
	const n = 8

	run := func(bodies [][]byte) []int {
		statuses := make([]int, len(bodies))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, b := range bodies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				req, _ := http.NewRequest(http.MethodPut, reg+"race", bytes.NewReader(b))
				req.Header.Set("Authorization", "Bearer "+testToken)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				statuses[i] = resp.StatusCode
			}()
		}
		close(start)
		wg.Wait()
		return statuses
	}

	// Different versions, the package does not exist yet.
	var bodies [][]byte
	for i := range n {
		bodies = append(bodies, npmpack.NewPublish(t, "race", fmt.Sprintf("1.0.%d", i), nil).Body(reg))
	}
	for i, s := range run(bodies) {
		if s != http.StatusCreated {
			t.Errorf("publish 1.0.%d: %d", i, s)
		}
	}
	doc := e.packument("js", "race", false)
	if got := len(doc["versions"].(map[string]any)); got != n {
		t.Errorf("%d versions landed, want %d", got, n)
	}
	if e.count(`SELECT count(*) FROM npm_packages WHERE name = 'race'`) != 1 {
		t.Errorf("more than one package row")
	}

	// The same version, several times (different tarball bytes each, as
	// two machines packing the same version would produce).
	bodies = nil
	for i := range n {
		p := npmpack.NewPublish(t, "race", "2.0.0", map[string]any{"description": fmt.Sprintf("attempt %d", i)})
		bodies = append(bodies, p.Body(reg))
	}
	created, conflicts := 0, 0
	for _, s := range run(bodies) {
		switch s {
		case http.StatusCreated:
			created++
		case http.StatusConflict:
			conflicts++
		default:
			t.Errorf("same-version publish: %d", s)
		}
	}
	if created != 1 || conflicts != n-1 {
		t.Errorf("same version: %d created, %d conflicts", created, conflicts)
	}
	if got := e.count(`SELECT count(*) FROM npm_versions WHERE version = '2.0.0'`); got != 1 {
		t.Errorf("%d rows for 2.0.0", got)
	}
	if got := e.count(`SELECT count(*) FROM npm_files f JOIN npm_versions v ON v.namespace_id = f.namespace_id AND v.id = f.npm_version_id`); got != n+1 {
		t.Errorf("%d file rows, want %d", got, n+1)
	}
	// Every file row owns exactly one attachment.
	if got := e.count(`SELECT count(*) FROM npm_files f JOIN blob_storage_attachments a
		ON a.namespace_id = f.namespace_id AND a.id = f.blob_storage_attachment_id AND a.sha256 = f.blob_sha256`); got != n+1 {
		t.Errorf("%d file attachments, want %d", got, n+1)
	}
}

// TestRevisionsAndUnpublish: _rev changes with every write and is checked
// by unpublish; deprecate; unpublish of the last version trashes the
// package; the trash keeps the rows.
func TestRevisionsAndUnpublish(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	reg := e.registry("js")
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0-rc.1"} {
		e.publish("js", npmpack.NewPublish(t, "rev", v, nil))
	}
	doc := e.packument("js", "rev", false)
	rev1 := doc["_rev"].(string)
	if doc["dist-tags"].(map[string]any)["latest"] != "1.2.0-rc.1" {
		t.Fatalf("latest: %v", doc["dist-tags"])
	}

	// Deprecate 1.0.0 (PUT of the whole document, no -rev).
	doc["versions"].(map[string]any)["1.0.0"].(map[string]any)["deprecated"] = "old"
	b, _ := json.Marshal(doc)
	if status, body, _ := e.do(http.MethodPut, reg+"rev", "token", b, nil); status != http.StatusCreated {
		t.Fatalf("deprecate: %d %s", status, body)
	}
	doc = e.packument("js", "rev", false)
	rev2 := doc["_rev"].(string)
	if rev2 == rev1 || doc["versions"].(map[string]any)["1.0.0"].(map[string]any)["deprecated"] != "old" {
		t.Fatalf("after deprecate: rev %s -> %s, %v", rev1, rev2, doc["versions"])
	}

	// Unpublish 1.2.0-rc.1 with the stale revision: 409, nothing changes.
	delete(doc["versions"].(map[string]any), "1.2.0-rc.1")
	b, _ = json.Marshal(doc)
	if status, body, _ := e.do(http.MethodPut, reg+"rev/-rev/"+rev1, "token", b, nil); status != http.StatusConflict {
		t.Errorf("stale revision: %d %s", status, body)
	}
	// With the current one: the version goes, latest is recomputed by the
	// server (1.1.0, although the body says nothing about it).
	if status, body, _ := e.do(http.MethodPut, reg+"rev/-rev/"+rev2, "token", b, nil); status != http.StatusCreated {
		t.Fatalf("unpublish: %d %s", status, body)
	}
	doc = e.packument("js", "rev", false)
	if _, ok := doc["versions"].(map[string]any)["1.2.0-rc.1"]; ok || doc["dist-tags"].(map[string]any)["latest"] != "1.1.0" {
		t.Errorf("after unpublish: %v %v", doc["dist-tags"], doc["versions"])
	}
	// npm's follow-up DELETE of the tarball: 201, nothing left to do.
	rev3 := doc["_rev"].(string)
	if status, body, _ := e.do(http.MethodDelete, reg+"rev/-/rev-1.2.0-rc.1.tgz/-rev/"+rev3, "token", nil, nil); status != http.StatusCreated {
		t.Errorf("DELETE unpublished tarball: %d %s", status, body)
	}
	if status, _, _ := e.do(http.MethodDelete, reg+"rev/-/rev-9.9.9.tgz/-rev/"+rev3, "token", nil, nil); status != http.StatusNotFound {
		t.Errorf("DELETE unknown tarball: %d", status)
	}
	// DELETE of an active version's tarball unpublishes that version.
	if status, body, _ := e.do(http.MethodDelete, reg+"rev/-/rev-1.1.0.tgz/-rev/"+rev3, "token", nil, nil); status != http.StatusCreated {
		t.Errorf("DELETE active tarball: %d %s", status, body)
	}
	doc = e.packument("js", "rev", false)
	if len(doc["versions"].(map[string]any)) != 1 || doc["dist-tags"].(map[string]any)["latest"] != "1.0.0" {
		t.Errorf("after tarball DELETE: %v %v", doc["dist-tags"], doc["versions"])
	}
	// The last version: the package goes to the trash.
	if status, body, _ := e.do(http.MethodDelete, reg+"rev/-/rev-1.0.0.tgz/-rev/undefined", "token", nil, nil); status != http.StatusCreated {
		t.Errorf("DELETE last tarball: %d %s", status, body)
	}
	if status, _, _ := e.do(http.MethodGet, reg+"rev", "token", nil, nil); status != http.StatusNotFound {
		t.Errorf("GET trashed package: %d", status)
	}
	if n := e.count(`SELECT count(*) FROM npm_versions WHERE soft_deleted_at IS NOT NULL`); n != 3 {
		t.Errorf("%d versions in the trash, want 3", n)
	}
	if n := e.count(`SELECT count(*) FROM npm_files WHERE soft_deleted_at IS NOT NULL`); n != 3 {
		t.Errorf("%d files in the trash, want 3", n)
	}
	if n := e.count(`SELECT count(*) FROM npm_metadata_files`); n != 0 {
		t.Errorf("%d metadata files left for a trashed package", n)
	}
	// The attachments of trashed files stay (restorable).
	if n := e.count(`SELECT count(*) FROM npm_files f JOIN blob_storage_attachments a ON a.namespace_id = f.namespace_id AND a.id = f.blob_storage_attachment_id`); n != 3 {
		t.Errorf("%d trashed file attachments, want 3", n)
	}
}

// TestMetadataCache: reads rebuild on a miss and store the files (one
// attachment each, old ones detached with a GC candidate); writes
// force-expire them; the River job a write queues rebuilds without a read.
func TestMetadataCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{queueJobs: true, Options: Options{RebuildDelay: -1}})
	reg := e.registry("js")
	e.publish("js", npmpack.NewPublish(t, "cache", "1.0.0", nil))
	fresh := func() int {
		return e.count(`SELECT count(*) FROM npm_metadata_files WHERE expires_at > now()`)
	}
	waitFresh := func(what string) {
		t.Helper()
		if n := e.runQueuedJobs(); n == 0 || fresh() != 3 {
			t.Fatalf("%s: the rebuild job did not refresh the metadata files (%d jobs ran)", what, n)
		}
	}
	waitFresh("after the first publish")
	status, _, hdr := e.do(http.MethodGet, reg+"cache", "", nil, nil)
	etag1 := hdr.Get("ETag")
	if status != 200 {
		t.Fatal(status)
	}
	// TTL: expires_at is about now + 7 days.
	if n := e.count(`SELECT count(*) FROM npm_metadata_files WHERE expires_at BETWEEN now() + interval '6 days 23 hours' AND now() + interval '7 days 1 hour'`); n != 3 {
		t.Errorf("%d files with the default TTL", n)
	}

	// A write force-expires in its transaction; the job rebuilds.
	if status, body, _ := e.do(http.MethodPut, reg+"-/package/cache/dist-tags/next", "token", []byte(`"1.0.0"`), nil); status != 201 {
		t.Fatalf("dist-tag: %d %s", status, body)
	}
	waitFresh("after a dist-tag")
	status, body, hdr := e.do(http.MethodGet, reg+"cache", "", nil, map[string]string{"If-None-Match": etag1})
	if status != 200 || hdr.Get("ETag") == etag1 || !strings.Contains(string(body), `"next":"1.0.0"`) {
		t.Errorf("after the write: %d etag %s -> %s", status, etag1, hdr.Get("ETag"))
	}
	// Each metadata file owns one attachment; the replaced full and
	// dist-tags files were detached and their blobs are GC candidates
	// (the abbreviated one did not change: no tags in it... it has them).
	if n := e.count(`SELECT count(*) FROM npm_metadata_files m JOIN blob_storage_attachments a
		ON a.namespace_id = m.namespace_id AND a.id = m.blob_storage_attachment_id AND a.sha256 = m.blob_sha256`); n != 3 {
		t.Errorf("%d metadata attachments, want 3", n)
	}
	if n := e.count(`SELECT count(*) FROM gc_blob_review_queue`); n < 2 {
		t.Errorf("%d GC candidates after the swap, want the replaced files", n)
	}
	// A read after a force-expiry rebuilds on the request path.
	if _, err := e.pool.Exec(e.ctx, `UPDATE npm_metadata_files SET expires_at = now()`); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := e.do(http.MethodGet, reg+"cache", "", nil, nil); status != 200 || fresh() != 3 {
		t.Errorf("read-path rebuild: %d, %d fresh", status, fresh())
	}
}

// TestEndpoints covers the small endpoints and refusals.
func TestEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	reg := e.registry("js")
	e.publish("js", npmpack.NewPublish(t, "ep", "1.0.0", nil))

	check := func(method, path, auth string, body []byte, want int, contains string) {
		t.Helper()
		status, b, _ := e.do(method, reg+path, auth, body, nil)
		if status != want || !strings.Contains(string(b), contains) {
			t.Errorf("%s %s: %d %s, want %d containing %q", method, path, status, b, want, contains)
		}
	}
	check("GET", "-/ping", "", nil, 200, "{}")
	check("GET", "-/whoami", "token", nil, 200, `"username":"admin"`)
	check("GET", "-/whoami", "", nil, 401, "error")
	check("GET", "-/whoami", "nope", nil, 401, "invalid token")
	check("POST", "-/v1/login", "", []byte(`{}`), 404, "error")
	check("POST", "-/npm/v1/security/advisories/bulk", "", []byte(`{"ep":["1.0.0"]}`), 200, "{}")
	check("PUT", "-/user/org.couchdb.user:alice", "", []byte(`{"name":"alice","password":"`+testToken+`"}`), 201, `"token":"`+testToken+`"`)
	check("PUT", "-/user/org.couchdb.user:alice", "", []byte(`{"name":"alice","password":"wrong"}`), 401, "error")
	check("PUT", "-/user/org.couchdb.user:alice/-rev/undefined", "token", []byte(`{"name":"alice"}`), 201, "token")
	// The admin token cannot be revoked from npm: logout just succeeds. A
	// string that is no token of this registry is refused.
	check("DELETE", "-/user/token/"+url.PathEscape(testToken), "token", nil, 200, "Logged out")
	check("DELETE", "-/user/token/abc%3D", "token", nil, 401, "invalid token")
	check("GET", "-/npm/v1/user", "token", nil, 200, `"name":"admin"`)
	check("GET", "-/npm/v1/tokens", "token", nil, 200, `"objects":[]`)
	check("GET", "-/v1/search?text=ep&size=5", "", nil, 200, `"name":"ep"`)
	check("GET", "-/v1/search?text=nothing-matches", "", nil, 200, `"total":0`)
	check("GET", "ep/1.0.0", "", nil, 200, `"version":"1.0.0"`)
	check("GET", "ep/latest", "", nil, 200, `"version":"1.0.0"`)
	check("GET", "ep/9.0.0", "", nil, 404, "error")
	check("PUT", "-/package/ep/dist-tags/v1", "token", []byte(`"1.0.0"`), 400, "SemVer range")
	check("PUT", "-/package/ep/dist-tags/beta", "token", []byte(`"2.0.0"`), 404, "error")
	check("PUT", "-/package/ep/dist-tags/beta", "token", []byte(`1.0.0`), 400, "JSON string")
	check("PUT", "-/package/ep/dist-tags/beta", "", []byte(`"1.0.0"`), 401, "error")
	check("DELETE", "-/package/ep/dist-tags/latest", "token", nil, 400, "latest")
	check("DELETE", "-/package/ep/dist-tags/nope", "token", nil, 404, "error")
	check("GET", "-/nothing", "", nil, 404, "no such endpoint")
	check("PATCH", "ep", "token", nil, 405, "error")
	check("DELETE", "ep/-rev/1-abc", "token", nil, 409, "revision")

	// Unknown registries.
	if status, _, _ := e.do("GET", e.base+"/npm/acme/nope/ep", "token", nil, nil); status != 404 {
		t.Errorf("unknown repository: %d", status)
	}
	if status, _, _ := e.do("GET", e.base+"/npm/nope/js/ep", "", nil, nil); status != 401 {
		t.Errorf("unknown namespace, anonymous: %d", status)
	}
	// Private registry: token required.
	if status, _, _ := e.do("GET", e.registry("private")+"ep", "", nil, nil); status != 401 {
		t.Errorf("private anonymous: %d", status)
	}
	if status, _, _ := e.do("GET", e.registry("private")+"ep", "token", nil, nil); status != 404 {
		t.Errorf("private with token: %d", status)
	}

	// Limits (docs/schema.md "Lengths, names and limits"): versions
	// (soft-deleted ones count) and tags.
	if _, err := e.pool.Exec(e.ctx, `UPDATE npm_packages SET versions_count = 25000 WHERE name = 'ep'`); err != nil {
		t.Fatal(err)
	}
	status, body, _ := e.do(http.MethodPut, reg+"ep", "token", npmpack.NewPublish(t, "ep", "1.0.1", nil).Body(reg), nil)
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "25000") {
		t.Errorf("versions limit: %d %s", status, body)
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE npm_packages SET versions_count = 0 WHERE name = 'ep'`); err != nil {
		t.Fatal(err)
	}
	var ids []uuid.UUID
	var names []string
	for i := range 999 {
		id, _ := uuid.NewV7()
		ids = append(ids, id)
		names = append(names, fmt.Sprintf("tag%d", i))
	}
	if _, err := e.pool.Exec(e.ctx, `
		INSERT INTO npm_tags (id, namespace_id, npm_package_id, npm_version_id, name)
		SELECT u.id, p.namespace_id, p.id, v.id, u.name
		FROM npm_packages p JOIN npm_versions v ON v.npm_package_id = p.id AND v.namespace_id = p.namespace_id,
		     unnest($1::uuid[], $2::text[]) AS u(id, name)
		WHERE p.name = 'ep'`, ids, names); err != nil {
		t.Fatal(err)
	}
	// As the counter folder would have counted them.
	if _, err := e.pool.Exec(e.ctx, `UPDATE npm_packages SET tags_count = 1000 WHERE name = 'ep'`); err != nil {
		t.Fatal(err)
	}
	check("PUT", "-/package/ep/dist-tags/one-more", "token", []byte(`"1.0.0"`), 422, "1000")
	check("PUT", "-/package/ep/dist-tags/tag5", "token", []byte(`"1.0.0"`), 201, "tagged") // moving a tag is fine
	status, body, _ = e.do(http.MethodPut, reg+"ep", "token", func() []byte {
		p := npmpack.NewPublish(t, "ep", "1.0.2", nil)
		p.Tags = []string{"another"}
		return p.Body(reg)
	}(), nil)
	if status != http.StatusUnprocessableEntity {
		t.Errorf("tags limit on publish: %d %s", status, body)
	}
}

// TestRebuildJobsQueueOnce: a write queues a rebuild only when none of
// its package is waiting; a job that River has started (it may have read
// the data already) or is starting (its row locked) does not count.
func TestRebuildJobsQueueOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{queueJobs: true, Options: Options{RebuildDelay: -1}})
	jobs := func(name, state string) int {
		t.Helper()
		return e.count(`SELECT count(*) FROM river_job
			WHERE kind = 'npm_rebuild_packument' AND args->>'name' = $1 AND state::text LIKE $2`, name, state)
	}
	for i := range 5 {
		e.publish("js", npmpack.NewPublish(t, "burst", fmt.Sprintf("1.0.%d", i), nil))
	}
	if n := jobs("burst", "%"); n != 1 {
		t.Fatalf("%d rebuild jobs after a burst of 5 publishes, want 1", n)
	}
	e.publish("js", npmpack.NewPublish(t, "other", "1.0.0", nil))
	if n := jobs("other", "%"); n != 1 {
		t.Fatalf("%d rebuild jobs of another package, want its own", n)
	}

	// Started: the next write queues another job.
	if _, err := e.pool.Exec(e.ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now()
		WHERE kind = 'npm_rebuild_packument' AND args->>'name' = 'burst'`); err != nil {
		t.Fatal(err)
	}
	e.publish("js", npmpack.NewPublish(t, "burst", "1.0.5", nil))
	if n := jobs("burst", "available"); n != 1 {
		t.Fatalf("%d waiting rebuild jobs after a write during a running one, want 1", n)
	}

	// Being fetched (locked): the write neither waits for it nor relies on it.
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(e.ctx) }()
	if _, err := tx.Exec(e.ctx, `SELECT id FROM river_job WHERE kind = 'npm_rebuild_packument'
		AND args->>'name' = 'burst' AND state = 'available' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	e.publish("js", npmpack.NewPublish(t, "burst", "1.0.6", nil))
	if err := tx.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := jobs("burst", "available"); n != 2 {
		t.Fatalf("%d waiting rebuild jobs after a write while one was locked, want 2", n)
	}

	// The waiting jobs rebuild with every version.
	if n := e.runQueuedJobs(); n != 3 {
		t.Fatalf("%d jobs ran, want 3", n)
	}
	status, body, _ := e.do(http.MethodGet, e.registry("js")+"burst", "", nil, nil)
	for i := range 7 {
		if v := fmt.Sprintf(`"1.0.%d"`, i); status != http.StatusOK || !strings.Contains(string(body), v) {
			t.Fatalf("packument after the jobs: %d, %s missing", status, v)
		}
	}
}

// TestRebuildJobsCoalesce: with River running, a burst of publishes
// queues few jobs (one while a job waits); a job whose package has a
// later rebuild waiting records "superseded" and builds nothing; the
// files end fresh with every version.
func TestRebuildJobsCoalesce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{withJobs: true, Options: Options{RebuildDelay: 2 * time.Second}})
	const n = 12
	for i := range n {
		e.publish("js", npmpack.NewPublish(t, "burst", fmt.Sprintf("1.0.%d", i), nil))
	}
	outcomes := func() (map[string]int, int) {
		rows, err := e.pool.Query(e.ctx, `
			SELECT coalesce(metadata->'output'->>'outcome', state::text) FROM river_job
			WHERE kind = 'npm_rebuild_packument' AND args->>'name' = 'burst'`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, o := range got {
			m[o]++
		}
		return m, len(got)
	}
	deadline := time.Now().Add(30 * time.Second)
	var m map[string]int
	for {
		var total int
		m, total = outcomes()
		if total > 0 && m["superseded"]+m["rebuilt"]+m["fresh"] == total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rebuild jobs did not all finish: %v", m)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Each job waited 2 s; every publish of the burst that came while one
	// was waiting queued none.
	if m["rebuilt"] < 1 || m["superseded"]+m["rebuilt"]+m["fresh"] >= n {
		t.Fatalf("job outcomes %v: want fewer jobs than publishes and at least one rebuild", m)
	}
	if fresh := e.count(`SELECT count(*) FROM npm_metadata_files WHERE expires_at > now()`); fresh != 3 {
		t.Fatalf("%d fresh metadata files after the jobs, want 3", fresh)
	}
	status, body, _ := e.do(http.MethodGet, e.registry("js")+"burst", "", nil, nil)
	if status != http.StatusOK || !strings.Contains(string(body), fmt.Sprintf(`"1.0.%d"`, n-1)) || !strings.Contains(string(body), `"1.0.0"`) {
		t.Fatalf("packument after the burst: %d", status)
	}
}

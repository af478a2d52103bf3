package npm

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testsupport/npmpack"
	"github.com/artifact-registry/artifact-registry/protocol/npm/npmpublish"
)

// wantError fails unless the answer is status with npm's error body
// containing text.
func wantError(t *testing.T, what string, status int, body []byte, hdr http.Header, wantStatus int, text string) {
	t.Helper()
	var msg map[string]string
	if status != wantStatus || json.Unmarshal(body, &msg) != nil || !strings.Contains(msg["error"], text) {
		t.Errorf("%s: %d %s, want %d with an error containing %q", what, status, body, wantStatus, text)
	}
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: content type %q", what, ct)
	}
}

// TestBadJSONText: text PostgreSQL cannot store (the escape \u0000, UTF-16
// surrogates that do not pair, invalid UTF-8) in any npm JSON body is a
// 400 with npm's error body and writes nothing; it reached the database
// and came back as a 500 before.
func TestBadJSONText(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	reg := e.registry("js")
	good := npmpack.NewPublish(t, "txt", "1.0.0", nil)
	bad := map[string]string{
		"NUL escape":          `"a \u0000 b"`,
		"lone high surrogate": `"a \ud800 b"`,
		"lone low surrogate":  `"a \uDC00 b"`,
		"high then not low":   `"a \ud800\u0041 b"`,
		"high at the end":     `"a \ud800"`,
		"invalid UTF-8":       "\"a \xff\xfe b\"",
	}
	for name, text := range bad {
		body := bytes.ReplaceAll(good.Body(reg), []byte(`"test package txt"`), []byte(text))
		status, resp, hdr := e.do(http.MethodPut, reg+"txt", "token", body, nil)
		wantError(t, "publish, "+name, status, resp, hdr, 400, "malformed JSON body")
		e.nothingWritten("publish, " + name)
	}

	// A surrogate pair is fine, and so are escapes of other characters.
	ok := npmpack.NewPublish(t, "txt", "1.0.0", nil)
	okBody := bytes.ReplaceAll(ok.Body(reg), []byte(`"test package txt"`), []byte(`"smile \ud83d\ude00 \u00e9 \\u0000 \n"`))
	if status, resp, _ := e.do(http.MethodPut, reg+"txt", "token", okBody, nil); status != http.StatusCreated {
		t.Fatalf("publish with a surrogate pair: %d %s", status, resp)
	}
	doc := e.packument("js", "txt", false)
	if d := doc["description"]; d != "smile 😀 é \\u0000 \n" {
		t.Errorf("description %q", d)
	}

	// Deprecate: the whole document back, with the message in the version.
	for name, text := range bad {
		raw, _ := json.Marshal(doc)
		raw = bytes.Replace(raw, []byte(`"version":"1.0.0"`), []byte(`"deprecated":`+text+`,"version":"1.0.0"`), 1)
		status, resp, hdr := e.do(http.MethodPut, reg+"txt", "token", raw, nil)
		wantError(t, "deprecate, "+name, status, resp, hdr, 400, "malformed JSON body")
	}
	if n := e.count(`SELECT count(*) FROM npm_versions WHERE package_json ? 'deprecated'`); n != 0 {
		t.Errorf("%d versions deprecated by refused bodies", n)
	}

	// The other JSON bodies: dist-tag, login, token create.
	tokens := e.count(`SELECT count(*) FROM access_tokens`)
	for name, text := range bad {
		status, resp, hdr := e.do(http.MethodPut, reg+"-/package/txt/dist-tags/beta", "token", []byte(strings.Replace(text, "a ", "1.0.0", 1)), nil)
		wantError(t, "dist-tag, "+name, status, resp, hdr, 400, "malformed JSON body")
		status, resp, hdr = e.do(http.MethodPut, reg+"-/user/org.couchdb.user:alice", "",
			[]byte(`{"name":`+text+`,"password":"`+testToken+`"}`), nil)
		wantError(t, "login, "+name, status, resp, hdr, 400, "malformed JSON body")
		status, resp, hdr = e.do(http.MethodPost, reg+"-/npm/v1/tokens", "token",
			[]byte(`{"name":`+text+`,"password":"`+testToken+`"}`), nil)
		wantError(t, "token create, "+name, status, resp, hdr, 400, "malformed JSON body")
	}
	if n := e.count(`SELECT count(*) FROM npm_tags WHERE name = 'beta'`); n != 0 {
		t.Errorf("refused dist-tag bodies set %d tags", n)
	}
	if n := e.count(`SELECT count(*) FROM access_tokens`); n != tokens {
		t.Errorf("refused token bodies made %d tokens", n-tokens)
	}
}

// chunked hides a body's length, so that the request has no
// Content-Length and only reading it finds out its size.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

// doStream sends a body of unknown length.
func (e *env) doStream(method, url string, body io.Reader) (int, []byte, http.Header) {
	e.t.Helper()
	req, err := http.NewRequest(method, url, chunked{body})
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// TestBodyLimits: a publish body past MaxPublishSize, a publish document
// past its metadata allowance and any other JSON body past 1 MiB get 413
// with npm's error body, declared (Content-Length) or found out while
// reading (chunked), and write nothing.
func TestBodyLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{Options: Options{MaxPublishSize: 64 << 10}})
	reg := e.registry("js")
	big := npmpack.NewPublish(t, "big", "1.0.0", nil)
	big.Tarball = npmpack.Tarball(t, big.PkgJSON, map[string]string{"noise.bin": string(randomText(80 << 10))})
	body := big.Body(reg)

	status, resp, hdr := e.do(http.MethodPut, reg+"big", "token", body, nil)
	wantError(t, "publish with Content-Length", status, resp, hdr, 413, "limit of 65536 bytes")
	status, resp, hdr = e.doStream(http.MethodPut, reg+"big", bytes.NewReader(body))
	wantError(t, "chunked publish", status, resp, hdr, 413, "limit of 65536 bytes")
	e.nothingWritten("oversized publish")

	// The document besides its tarball: 16 MiB at most.
	e2 := newEnv(t, envOptions{})
	reg2 := e2.registry("js")
	p := npmpack.NewPublish(t, "doc", "1.0.0", map[string]any{"notes": strings.Repeat("r", npmpublish.MetadataAllowance)})
	status, resp, hdr = e2.doStream(http.MethodPut, reg2+"doc", bytes.NewReader(p.Body(reg2)))
	wantError(t, "huge document", status, resp, hdr, 413, "without its tarball")
	e2.nothingWritten("huge document")

	huge := []byte(`"` + strings.Repeat("x", maxJSONBody) + `"`)
	for _, c := range []struct{ method, path string }{
		{http.MethodPut, "-/package/big/dist-tags/beta"},
		{http.MethodPut, "-/user/org.couchdb.user:alice"},
		{http.MethodPost, "-/npm/v1/tokens"},
	} {
		status, resp, hdr := e.do(c.method, reg+c.path, "token", huge, nil)
		wantError(t, c.path, status, resp, hdr, 413, "limit of 1048576 bytes")
		status, resp, hdr = e.doStream(c.method, reg+c.path, bytes.NewReader(huge))
		wantError(t, c.path+" chunked", status, resp, hdr, 413, "limit of 1048576 bytes")
	}
}

// randomText is n bytes that do not compress.
func randomText(n int) []byte {
	b := make([]byte, n)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// TestGzipBomb: a tarball that expands to 1 GiB is refused with a 400 once
// the inspection has decompressed MaxUnpackedSize bytes, and writes
// nothing; under the limit, the same construction publishes. The limit is
// 64 MiB here: at the default (1 GiB, checked below) the test inflated
// 1 GiB of zeros under the race detector, ten seconds of CPU for the same
// code path.
func TestGzipBomb(t *testing.T) {
	t.Parallel()
	if got := (Options{}).withDefaults().MaxUnpackedSize; got != 1<<30 {
		t.Fatalf("default MaxUnpackedSize = %d, want 1 GiB", got)
	}
	const limit = 64 << 20
	e := newEnv(t, envOptions{Options: Options{MaxUnpackedSize: limit}})
	reg := e.registry("js")
	p := npmpack.NewPublish(t, "bomb", "1.0.0", nil)
	p.Tarball = npmpack.GzipBomb(t, p.PkgJSON, 1<<30)
	t.Logf("bomb: %d bytes compressed, 1 GiB expanded", len(p.Tarball))
	start := time.Now()
	status, resp, hdr := e.do(http.MethodPut, reg+"bomb", "token", p.Body(reg), nil)
	t.Logf("refused in %v", time.Since(start))
	wantError(t, "gzip bomb", status, resp, hdr, 400, "expands past this registry's limit of 67108864 bytes")
	e.nothingWritten("gzip bomb")

	small := newEnv(t, envOptions{Options: Options{MaxUnpackedSize: limit}})
	q := npmpack.NewPublish(t, "zeros", "1.0.0", nil)
	q.Tarball = append(npmpack.GzipBomb(t, q.PkgJSON, 16<<20), npmpack.GzipTrailer(t)...)
	if status, resp, _ := small.do(http.MethodPut, small.registry("js")+"zeros", "token", q.Body(small.registry("js")), nil); status != http.StatusCreated {
		t.Fatalf("16 MiB of zeros: %d %s", status, resp)
	}
}

// cliOrderBody is a publish body as npm writes it: versions before
// _attachments, with the base64 broken into lines by \n escapes and its
// slashes escaped (both valid JSON that a streaming reader must unescape).
func cliOrderBody(p *npmpack.Publish, reg string) []byte {
	s512, s1 := sha512.Sum512(p.Tarball), sha1.Sum(p.Tarball)
	manifest := map[string]any{}
	for k, v := range p.PkgJSON {
		manifest[k] = v
	}
	manifest["dist"] = map[string]any{"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]), "shasum": hex.EncodeToString(s1[:])}
	versions, _ := json.Marshal(map[string]any{p.Version: manifest})
	b64 := base64.StdEncoding.EncodeToString(p.Tarball)
	var data strings.Builder
	for i := 0; i < len(b64); i += 76 {
		data.WriteString(strings.ReplaceAll(b64[i:min(i+76, len(b64))], "/", `\/`))
		data.WriteString(`\n`)
	}
	return fmt.Appendf(nil, `{ "_id": %q, "name": %q, "dist-tags": {"latest": %q}, "versions": %s,
  "_attachments": { %q: { "content_type": "application/octet-stream", "data": "%s", "length": %d } } }`,
		p.Name, p.Name, p.Version, versions, p.Name+"-"+p.Version+".tgz", data.String(), len(p.Tarball))
}

// TestPublishBodyShapes: the streaming reader takes the attachment before
// or after the versions, escaped base64, whitespace; and refuses a second
// data string, a second _attachments, a truncated body and trailing data,
// writing nothing.
func TestPublishBodyShapes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	reg := e.registry("js")
	p := npmpack.NewPublish(t, "shapes", "1.0.0", map[string]any{"description": "x"})
	p.Tarball = npmpack.Tarball(t, p.PkgJSON, map[string]string{"noise.bin": string(randomText(50 << 10))})
	body := cliOrderBody(p, reg)

	bad := []struct {
		name, body, text string
		status           int
	}{
		{"two data strings", strings.Replace(string(body), `"length"`, `"data": "AAAA", "length"`, 1), "exactly one attachment", 400},
		{"two attachments members", strings.Replace(string(body), `"_attachments"`, `"_attachments": {}, "_attachments"`, 1), "two _attachments", 400},
		{"truncated", string(body[:len(body)/2]), "malformed JSON body", 400},
		{"truncated after the data", string(body[:len(body)-10]), "malformed JSON body", 400},
		{"trailing data", string(body) + " {}", "data after the JSON object", 400},
		{"data is not base64", strings.Replace(string(body), `"data": "`, `"data": "*`, 1), "base64", 400},
		{"escaped non-ASCII in data", strings.Replace(string(body), `"data": "`, `"data": "\u00e9`, 1), "base64", 400},
		{"deep nesting", strings.Replace(string(body), `"versions"`, `"x": `+strings.Repeat("[", npmpublish.MaxJSONDepth+1)+`, "versions"`, 1), "nested too deeply", 400},
		{"attachments under a revision", string(body), "without a revision", 400},
	}
	for _, c := range bad {
		path := reg + "shapes"
		if c.name == "attachments under a revision" {
			path += "/-rev/1-abc"
		}
		status, resp, hdr := e.do(http.MethodPut, path, "token", []byte(c.body), nil)
		wantError(t, c.name, status, resp, hdr, c.status, c.text)
		e.nothingWritten(c.name)
	}

	if status, resp, _ := e.doStream(http.MethodPut, reg+"shapes", bytes.NewReader(body)); status != http.StatusCreated {
		t.Fatalf("publish in npm's order: %d %s", status, resp)
	}
	status, tgz, _ := e.do(http.MethodGet, reg+"shapes/-/shapes-1.0.0.tgz", "", nil, nil)
	if status != http.StatusOK || !bytes.Equal(tgz, p.Tarball) {
		t.Fatalf("tarball back: %d, %d bytes, equal %v", status, len(tgz), bytes.Equal(tgz, p.Tarball))
	}
	var sha1Meta []byte
	if err := e.pool.QueryRow(e.ctx, `SELECT metadata_sha1 FROM blob_storage_blobs`).Scan(&sha1Meta); err != nil {
		t.Fatal(err)
	}
	if s1 := sha1.Sum(p.Tarball); !bytes.Equal(sha1Meta, s1[:]) {
		t.Errorf("blob SHA-1 %x, want %x", sha1Meta, s1)
	}
}

// TestPublishClientGoesAway: a client that stops sending in the middle of
// the tarball (its connection half-closed, fewer bytes than its
// Content-Length) gets a 400, and the part of the tarball already staged
// is discarded: no upload session, no blob.
func TestPublishClientGoesAway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	reg := e.registry("js")
	p := npmpack.NewPublish(t, "gone", "1.0.0", nil)
	p.Tarball = npmpack.Tarball(t, p.PkgJSON, map[string]string{"noise.bin": string(randomText(1 << 20))})
	body := cliOrderBody(p, reg)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "PUT /npm/acme/js/gone HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", testToken, len(body))
	if _, err := conn.Write(body[:len(body)/2]); err != nil {
		t.Fatal(err)
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	wantError(t, "half a body", resp.StatusCode, got, resp.Header, 400, "reading the request body")
	e.nothingWritten("half a body")
}

package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/protocol/oci/ocimanifest"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// apiErr decodes a spec error body and checks status and code.
func wantError(t *testing.T, resp *http.Response, status int, code string) map[string]any {
	t.Helper()
	body := readBody(t, resp)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d: %s", resp.Request.Method, resp.Request.URL, resp.StatusCode, status, body)
	}
	var doc struct {
		Errors []map[string]any `json:"errors"`
	}
	if resp.Request.Method == http.MethodHead {
		return nil
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil || len(doc.Errors) != 1 {
		t.Fatalf("%s %s: not a spec error body (%v): %s", resp.Request.Method, resp.Request.URL, err, body)
	}
	if doc.Errors[0]["code"] != code {
		t.Fatalf("%s %s: code %v, want %s: %s", resp.Request.Method, resp.Request.URL, doc.Errors[0]["code"], code, body)
	}
	return doc.Errors[0]
}

func wantStatus(t *testing.T, resp *http.Response, status int) string {
	t.Helper()
	body := readBody(t, resp)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d: %s", resp.Request.Method, resp.Request.URL, resp.StatusCode, status, body)
	}
	return body
}

func sha(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }

// testImage pushes a config and a layer and returns the manifest body.
func testImage(t *testing.T, c *benchClient, layer string) []byte {
	t.Helper()
	cfg := []byte(`{"architecture":"amd64","os":"linux","layer":"` + layer + `"}`)
	cd := c.pushBlob(cfg)
	ld := c.pushBlob([]byte(layer))
	b, _ := json.Marshal(imageManifest(cd, ld, int64(len(cfg)), int64(len(layer))))
	return b
}

func putManifest(s *testServer, t *testing.T, name, ref string, body []byte, ct string) *http.Response {
	return s.do(t, http.MethodPut, "/v2/"+name+"/manifests/"+ref, bytes.NewReader(body), map[string]string{"Content-Type": ct}, true)
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.repo(t, "acme", "private", enum.FormatDocker, enum.VisibilityPrivate)
	s.repo(t, "acme", "public", enum.FormatOCI, enum.VisibilityPublic)
	pub := newBenchClient(t, s, "acme/public/app")
	body := testImage(t, pub, "public layer")
	wantStatus(t, putManifest(s, t, "acme/public/app", "v1", body, mtOCIManifest), http.StatusCreated)
	priv := newBenchClient(t, s, "acme/private/app")
	pbody := testImage(t, priv, "private layer")
	wantStatus(t, putManifest(s, t, "acme/private/app", "v1", pbody, mtOCIManifest), http.StatusCreated)

	// Base check: a challenge without credentials, 200 with them.
	resp := s.do(t, http.MethodGet, "/v2/", nil, nil, false)
	if got, want := resp.Header.Get("WWW-Authenticate"), `Bearer realm="`+s.URL+`/v2/token",service="artifact-registry"`; got != want {
		t.Fatalf("WWW-Authenticate = %q", got)
	}
	wantError(t, resp, http.StatusUnauthorized, codeUnauthorized)
	wantStatus(t, s.do(t, http.MethodGet, "/v2/", nil, nil, true), http.StatusOK)
	wantStatus(t, s.do(t, http.MethodGet, "/v2/", nil, map[string]string{"Authorization": "Bearer " + testToken}, false), http.StatusOK)
	wantError(t, s.do(t, http.MethodGet, "/v2/", nil, map[string]string{"Authorization": "Bearer nope"}, false), http.StatusUnauthorized, codeUnauthorized)

	// Anonymous: public pulls work, everything else is challenged.
	wantStatus(t, s.do(t, http.MethodGet, "/v2/acme/public/app/manifests/v1", nil, nil, false), http.StatusOK)
	wantStatus(t, s.do(t, http.MethodGet, "/v2/acme/public/app/tags/list", nil, nil, false), http.StatusOK)
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/v2/acme/private/app/manifests/v1"},
		{http.MethodHead, "/v2/acme/private/app/manifests/v1"},
		{http.MethodGet, "/v2/acme/private/app/tags/list"},
		{http.MethodPost, "/v2/acme/public/app/blobs/uploads/"},
		{http.MethodPut, "/v2/acme/public/app/manifests/v2"},
		{http.MethodDelete, "/v2/acme/public/app/manifests/v1"},
		// Unknown names are not revealed to anonymous callers.
		{http.MethodGet, "/v2/acme/nothere/app/manifests/v1"},
		{http.MethodGet, "/v2/nobody/nothere/app/manifests/v1"},
	} {
		resp := s.do(t, tc.method, tc.path, nil, nil, false)
		if resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s %s: no challenge", tc.method, tc.path)
		}
		wantError(t, resp, http.StatusUnauthorized, codeUnauthorized)
	}
	// The admin learns that the name is unknown.
	wantError(t, s.do(t, http.MethodGet, "/v2/acme/nothere/app/manifests/v1", nil, nil, true), http.StatusNotFound, codeNameUnknown)
	wantError(t, s.do(t, http.MethodGet, "/v2/nobody/nothere/app/tags/list", nil, nil, true), http.StatusNotFound, codeNameUnknown)

	// Catalog: anonymous sees public images only.
	anonCat := wantStatus(t, s.do(t, http.MethodGet, "/v2/_catalog", nil, nil, false), http.StatusOK)
	adminCat := wantStatus(t, s.do(t, http.MethodGet, "/v2/_catalog", nil, nil, true), http.StatusOK)
	if !strings.Contains(anonCat, "acme/public/app") || strings.Contains(anonCat, "private") || !strings.Contains(adminCat, "acme/private/app") {
		t.Fatalf("catalog: anonymous %s, admin %s", anonCat, adminCat)
	}

	// Namespace conditions: suspended is read-only, blocked serves nothing.
	pool := s.Store.Pool()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `UPDATE namespaces SET suspended_at = now() WHERE slug = 'acme'`); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s.do(t, http.MethodGet, "/v2/acme/private/app/manifests/v1", nil, nil, true), http.StatusOK)
	wantError(t, s.do(t, http.MethodPost, "/v2/acme/private/app/blobs/uploads/", nil, nil, true), http.StatusForbidden, codeDenied)
	wantError(t, putManifest(s, t, "acme/private/app", "v2", pbody, mtOCIManifest), http.StatusForbidden, codeDenied)
	if _, err := pool.Exec(ctx, `UPDATE namespaces SET suspended_at = NULL, blocked_at = now() WHERE slug = 'acme'`); err != nil {
		t.Fatal(err)
	}
	wantError(t, s.do(t, http.MethodGet, "/v2/acme/private/app/manifests/v1", nil, nil, true), http.StatusForbidden, codeDenied)
	if _, err := pool.Exec(ctx, `UPDATE namespaces SET blocked_at = NULL, deleted_at = now() WHERE slug = 'acme'`); err != nil {
		t.Fatal(err)
	}
	wantError(t, s.do(t, http.MethodGet, "/v2/acme/private/app/manifests/v1", nil, nil, true), http.StatusNotFound, codeNameUnknown)
}

func TestClientErrors(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.repo(t, "acme", "images", enum.FormatOCI, enum.VisibilityPrivate)
	s.repo(t, "acme", "other", enum.FormatOCI, enum.VisibilityPrivate)
	const name = "acme/images/app"
	c := newBenchClient(t, s, name)
	body := testImage(t, c, "layer one")
	wantStatus(t, putManifest(s, t, name, "v1", body, mtOCIManifest), http.StatusCreated)
	sha512 := "sha512:" + strings.Repeat("ab", 64)
	good := sha([]byte("nothing"))

	for _, tc := range []struct {
		method, path string
		body         []byte
		hdr          map[string]string
		status       int
		code         string
	}{
		{"GET", "/v2/Acme/images/app/tags/list", nil, nil, 400, codeNameInvalid},
		{"GET", "/v2/acme/images/app_/tags/list", nil, nil, 400, codeNameInvalid},
		{"GET", "/v2/acme/images/tags/list", nil, nil, 404, codeNameUnknown},
		{"GET", "/v2/acme/images/app/blobs/" + sha512, nil, nil, 400, codeUnsupported},
		{"GET", "/v2/acme/images/app/manifests/" + sha512, nil, nil, 400, codeUnsupported},
		{"GET", "/v2/acme/images/app/referrers/" + sha512, nil, nil, 400, codeUnsupported},
		{"POST", "/v2/acme/images/app/blobs/uploads/?digest=" + sha512, []byte("x"), nil, 400, codeUnsupported},
		{"POST", "/v2/acme/images/app/blobs/uploads/?mount=" + sha512, nil, nil, 400, codeUnsupported},
		{"GET", "/v2/acme/images/app/blobs/sha256:nothex", nil, nil, 400, codeDigestInvalid},
		{"GET", "/v2/acme/images/app/manifests/sha256:baddigeststring", nil, nil, 400, codeDigestInvalid},
		{"GET", "/v2/acme/images/app/manifests/-bad-tag", nil, nil, 400, codeManifestInvalid},
		{"GET", "/v2/acme/images/app/blobs/" + good, nil, nil, 404, codeBlobUnknown},
		{"GET", "/v2/acme/images/app/manifests/nope", nil, nil, 404, codeManifestUnknown},
		{"GET", "/v2/acme/images/app/manifests/" + good, nil, nil, 404, codeManifestUnknown},
		{"DELETE", "/v2/acme/images/app/manifests/nope", nil, nil, 404, codeManifestUnknown},
		{"DELETE", "/v2/acme/images/app/blobs/" + good, nil, nil, 404, codeBlobUnknown},
		{"GET", "/v2/acme/images/never/tags/list", nil, nil, 404, codeNameUnknown},
		{"GET", "/v2/acme/images/app/blobs/uploads/" + uuid.NewString(), nil, nil, 404, codeBlobUploadUnknown},
		{"PATCH", "/v2/acme/images/app/blobs/uploads/not-a-uuid", []byte("x"), nil, 404, codeBlobUploadUnknown},
		{"PUT", "/v2/acme/images/app/blobs/uploads/" + uuid.NewString(), nil, nil, 400, codeDigestInvalid},
		{"POST", "/v2/acme/images/app/blobs/uploads/?digest=" + good, []byte("other bytes"), nil, 400, codeDigestInvalid},
		{"PUT", "/v2/acme/images/app/manifests/v2", []byte("{not json"), map[string]string{"Content-Type": mtOCIManifest}, 400, codeManifestInvalid},
		{"PUT", "/v2/acme/images/app/manifests/" + good, body, map[string]string{"Content-Type": mtOCIManifest}, 400, codeDigestInvalid},
		{"PUT", "/v2/acme/images/app/manifests/v2", []byte(`{"schemaVersion":1}`), map[string]string{"Content-Type": ocimanifest.MediaTypeDockerSchema1}, 400, codeManifestInvalid},
		{"PUT", "/v2/acme/images/app/manifests/v2?tag=" + strings.Repeat("x", 200), body, map[string]string{"Content-Type": mtOCIManifest}, 400, codeManifestInvalid},
		{"POST", "/v2/acme/images/app/manifests/v1", nil, nil, 405, codeUnsupported},
		{"PUT", "/v2/acme/images/app/tags/list", nil, nil, 405, codeUnsupported},
		{"GET", "/v2/acme/images/app/nonsense", nil, nil, 404, codeNameUnknown},
	} {
		var rd *bytes.Reader
		if tc.body != nil {
			rd = bytes.NewReader(tc.body)
		}
		var resp *http.Response
		if rd != nil {
			resp = s.do(t, tc.method, tc.path, rd, tc.hdr, true)
		} else {
			resp = s.do(t, tc.method, tc.path, nil, tc.hdr, true)
		}
		wantError(t, resp, tc.status, tc.code)
	}

	// Limits: manifest size, reference count, and the blob/child rules.
	big := bytes.Repeat([]byte(" "), maxManifestSize+1)
	wantError(t, putManifest(s, t, name, "big", big, mtOCIManifest), http.StatusRequestEntityTooLarge, codeSizeInvalid)
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	layers := make([]any, 200)
	for i := range layers {
		layers[i] = m["layers"].([]any)[0]
	}
	m["layers"] = layers
	tooMany, _ := json.Marshal(m)
	wantError(t, putManifest(s, t, name, "many", tooMany, mtOCIManifest), http.StatusBadRequest, codeManifestInvalid)

	missing := imageManifest(sha([]byte("no config")), sha([]byte("no layer")), 9, 8)
	mb, _ := json.Marshal(missing)
	e := wantError(t, putManifest(s, t, name, "missing", mb, mtOCIManifest), http.StatusBadRequest, codeManifestBlobUnknown)
	if d, _ := e["detail"].(map[string]any); d == nil || !strings.HasPrefix(fmt.Sprint(d["digest"]), "sha256:") {
		t.Fatalf("MANIFEST_BLOB_UNKNOWN without the digest: %v", e)
	}
	// A blob of another image of the namespace does not count.
	other := newBenchClient(t, s, "acme/other/app")
	ob := testImage(t, other, "only in other")
	wantError(t, putManifest(s, t, name, "foreign", ob, mtOCIManifest), http.StatusBadRequest, codeManifestBlobUnknown)
	idx, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mtOCIIndex, "manifests": []any{
		map[string]any{"mediaType": mtOCIManifest, "digest": sha(ob), "size": len(ob)},
	}})
	wantError(t, putManifest(s, t, name, "index", idx, mtOCIIndex), http.StatusBadRequest, codeManifestUnknown)

	// Resumable uploads: out-of-order chunk (416 with the Range to resume
	// from), then finish; a session cannot be used from another repository.
	resp := s.do(t, http.MethodPost, "/v2/"+name+"/blobs/uploads/", nil, nil, true)
	wantStatus(t, resp, http.StatusAccepted)
	loc := resp.Header.Get("Location")
	resp = s.do(t, http.MethodPatch, loc, bytes.NewReader([]byte("0123")), map[string]string{"Content-Range": "0-3"}, true)
	wantStatus(t, resp, http.StatusAccepted)
	if resp.Header.Get("Range") != "0-3" {
		t.Fatalf("Range = %q", resp.Header.Get("Range"))
	}
	loc = resp.Header.Get("Location")
	resp = s.do(t, http.MethodPatch, loc, bytes.NewReader([]byte("89")), map[string]string{"Content-Range": "8-9"}, true)
	wantError(t, resp, http.StatusRequestedRangeNotSatisfiable, codeBlobUploadInvalid)
	if resp.Header.Get("Range") != "0-3" || resp.Header.Get("Location") == "" {
		t.Fatalf("416 headers: %v", resp.Header)
	}
	foreign := strings.Replace(loc, "/acme/images/app/", "/acme/other/app/", 1)
	wantError(t, s.do(t, http.MethodGet, foreign, nil, nil, true), http.StatusNotFound, codeBlobUploadUnknown)
	resp = s.do(t, http.MethodPut, loc+"?digest="+sha([]byte("01234567")), bytes.NewReader([]byte("4567")),
		map[string]string{"Content-Range": "4-7"}, true)
	wantStatus(t, resp, http.StatusCreated)
	if resp.Header.Get("Docker-Content-Digest") != sha([]byte("01234567")) {
		t.Fatalf("digest header %q", resp.Header.Get("Docker-Content-Digest"))
	}
	// Blob ranges.
	bl := "/v2/" + name + "/blobs/" + sha([]byte("01234567"))
	resp = s.do(t, http.MethodGet, bl, nil, map[string]string{"Range": "bytes=2-5"}, true)
	if got := wantStatus(t, resp, http.StatusPartialContent); got != "2345" || resp.Header.Get("Content-Range") != "bytes 2-5/8" {
		t.Fatalf("range: %q %v", got, resp.Header)
	}
	wantError(t, s.do(t, http.MethodGet, bl, nil, map[string]string{"Range": "bytes=9-"}, true), http.StatusRequestedRangeNotSatisfiable, codeBlobUnknown)
}

// TestClientErrorsBeforeDatabase: a server whose database is gone still
// answers malformed and sha512 digests in the spec's format (no 500), so
// they are decided before any query.
func TestClientErrorsBeforeDatabase(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.Store.Pool().Close()
	sha512 := "sha512:" + strings.Repeat("ab", 64)
	for _, tc := range []struct {
		method, path string
		code         string
	}{
		{"GET", "/v2/acme/images/app/blobs/" + sha512, codeUnsupported},
		{"HEAD", "/v2/acme/images/app/blobs/" + sha512, codeUnsupported},
		{"GET", "/v2/acme/images/app/manifests/" + sha512, codeUnsupported},
		{"DELETE", "/v2/acme/images/app/manifests/" + sha512, codeUnsupported},
		{"GET", "/v2/acme/images/app/referrers/" + sha512, codeUnsupported},
		{"POST", "/v2/acme/images/app/blobs/uploads/?digest=" + sha512, codeUnsupported},
		{"PUT", "/v2/acme/images/app/blobs/uploads/" + uuid.NewString() + "?digest=" + sha512, codeUnsupported},
		{"GET", "/v2/acme/images/app/blobs/sha256:short", codeDigestInvalid},
		{"GET", "/v2/Bad/Name/x/tags/list", codeNameInvalid},
	} {
		wantError(t, s.do(t, tc.method, tc.path, nil, nil, true), http.StatusBadRequest, tc.code)
	}
	// A manifest with a sha512 layer is refused before the database too.
	m, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mtOCIManifest,
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha([]byte("{}")), "size": 2},
		"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": sha512, "size": 1}}})
	wantError(t, putManifest(s, t, "acme/images/app", "v1", m, mtOCIManifest), http.StatusBadRequest, codeUnsupported)
}

// TestManifestData checks the rows a push leaves (docs/schema.md "Format
// tables"): one attachment
// per manifest and blob row, the payload stored as a content-addressed
// blob, the tree size, index relationships, tag moves updating the row,
// deletes removing tags and refusing children of a live index.
func TestManifestData(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.repo(t, "acme", "images", enum.FormatOCI, enum.VisibilityPrivate)
	const name = "acme/images/app"
	c := newBenchClient(t, s, name)
	ctx := context.Background()
	pool := s.Store.Pool()
	a := testImage(t, c, "layer A")
	b := testImage(t, c, "layer B, a bit longer")
	wantStatus(t, putManifest(s, t, name, "latest", a, mtOCIManifest), http.StatusCreated)

	tg, err := container.New(s.Store).ResolveTarget(ctx, "acme", "images", "app")
	if err != nil {
		t.Fatal(err)
	}
	// must runs a step the later ones build on: they stop when it fails.
	must := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	var size int64 // manifest a's size, part of the index's
	must("manifest size and payload attachment", func(t *testing.T) {
		var attachments int64
		var payloadSHA []byte
		if err := pool.QueryRow(ctx, `
		SELECT cm.size, cm.blob_sha256, (SELECT count(*) FROM blob_storage_attachments a
		  WHERE a.namespace_id = cm.namespace_id AND a.id = cm.blob_storage_attachment_id AND a.sha256 = cm.digest)
		FROM container_manifests cm WHERE cm.namespace_id = $1 AND cm.digest = $2`,
			tg.NamespaceID, sha256Bytes(a)).Scan(&size, &payloadSHA, &attachments); err != nil {
			t.Fatal(err)
		}
		var am struct {
			Config struct{ Size int64 }
			Layers []struct{ Size int64 }
		}
		_ = json.Unmarshal(a, &am)
		if want := int64(len(a)) + am.Config.Size + am.Layers[0].Size; size != want || attachments != 1 {
			t.Fatalf("manifest size %d (want %d), attachments %d", size, want, attachments)
		}
		if _, err := s.Store.StatBlob(ctx, tg.NamespaceID, [32]byte(payloadSHA)); err != nil {
			t.Fatalf("payload blob: %v", err)
		}
	})
	t.Run("blobs have attachments", func(t *testing.T) {
		var blobsWithoutAttachment int
		if err := pool.QueryRow(ctx, `
		SELECT count(*) FROM container_blobs cb WHERE cb.namespace_id = $1 AND NOT EXISTS (
		  SELECT 1 FROM blob_storage_attachments a WHERE a.namespace_id = cb.namespace_id
		  AND a.id = cb.blob_storage_attachment_id AND a.sha256 = cb.blob_sha256)`, tg.NamespaceID).Scan(&blobsWithoutAttachment); err != nil || blobsWithoutAttachment != 0 {
			t.Fatalf("container_blobs without attachment: %d %v", blobsWithoutAttachment, err)
		}
	})

	// A GET is a pull: its counters are buffered in counter_deltas (a HEAD is not).
	t.Run("GET counts a pull, HEAD does not", func(t *testing.T) {
		wantStatus(t, s.do(t, http.MethodHead, "/v2/"+name+"/manifests/latest", nil, nil, true), http.StatusOK)
		wantStatus(t, s.do(t, http.MethodGet, "/v2/"+name+"/manifests/latest", nil, nil, true), http.StatusOK)
		// Pushes record counter deltas too (the accounting triggers), so
		// wait for the pull's own rows; the pull writes them after its
		// response.
		var downloads, pulledAt int
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if err := pool.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE target = $2 AND target_id = $3 AND field = $4 AND delta = 1),
			count(*) FILTER (WHERE target = $5 AND target_id = $6 AND field = $7 AND observed_at IS NOT NULL)
			FROM counter_deltas WHERE namespace_id = $1`, tg.NamespaceID,
				int16(enum.CounterTargetRepository), tg.RepositoryID, int16(enum.CounterFieldDownloadsCount),
				int16(enum.CounterTargetContainerImage), tg.ImageID, int16(enum.CounterFieldLastDownloadedAt)).Scan(&downloads, &pulledAt); err != nil {
				t.Fatal(err)
			}
			if (downloads >= 1 && pulledAt >= 1) || time.Now().After(deadline) {
				break
			}
		}
		if downloads != 1 || pulledAt != 1 {
			t.Fatalf("pull counters: downloads %d, last_downloaded_at %d; want 1, 1", downloads, pulledAt)
		}
	})

	// Moving a tag updates its row.
	must("moving a tag updates its row", func(t *testing.T) {
		tagRow := func() (id, manifest uuid.UUID) {
			t.Helper()
			if err := pool.QueryRow(ctx, `SELECT id, container_manifest_id FROM container_tags WHERE namespace_id = $1 AND name = 'latest'`,
				tg.NamespaceID).Scan(&id, &manifest); err != nil {
				t.Fatal(err)
			}
			return
		}
		id1, m1 := tagRow()
		wantStatus(t, putManifest(s, t, name, "latest", b, mtOCIManifest), http.StatusCreated)
		id2, m2 := tagRow()
		if id1 != id2 || m1 == m2 {
			t.Fatalf("tag move: row %s -> %s, manifest %s -> %s", id1, id2, m1, m2)
		}
	})
	// The untagged manifest a stays, by digest.
	t.Run("untagged manifest stays by digest", func(t *testing.T) {
		wantStatus(t, s.do(t, http.MethodGet, "/v2/"+name+"/manifests/"+sha(a), nil, nil, true), http.StatusOK)
	})

	// Tag parameters (OCI-Tag), and an index over a and b.
	idx, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mtOCIIndex, "manifests": []any{
		map[string]any{"mediaType": mtOCIManifest, "digest": sha(a), "size": len(a)},
		map[string]any{"mediaType": mtOCIManifest, "digest": sha(b), "size": len(b)},
	}})
	must("index pushed with OCI-Tag parameters", func(t *testing.T) {
		resp := s.do(t, http.MethodPut, "/v2/"+name+"/manifests/"+sha(idx)+"?tag=multi&tag=stable", bytes.NewReader(idx),
			map[string]string{"Content-Type": mtOCIIndex}, true)
		wantStatus(t, resp, http.StatusCreated)
		if got := resp.Header.Values("OCI-Tag"); strings.Join(got, ",") != "multi,stable" {
			t.Fatalf("OCI-Tag = %v", got)
		}
	})
	t.Run("index relationships and size", func(t *testing.T) {
		var idxSize, rels int64
		if err := pool.QueryRow(ctx, `SELECT cm.size, (SELECT count(*) FROM container_manifest_relationships r
		WHERE r.namespace_id = cm.namespace_id AND r.parent_container_manifest_id = cm.id)
		FROM container_manifests cm WHERE cm.namespace_id = $1 AND cm.digest = $2`, tg.NamespaceID, sha256Bytes(idx)).Scan(&idxSize, &rels); err != nil {
			t.Fatal(err)
		}
		var sizeB int64
		_ = pool.QueryRow(ctx, `SELECT size FROM container_manifests WHERE namespace_id = $1 AND digest = $2`, tg.NamespaceID, sha256Bytes(b)).Scan(&sizeB)
		if rels != 2 || idxSize != int64(len(idx))+size+sizeB {
			t.Fatalf("index: %d relationships, size %d (want %d)", rels, idxSize, int64(len(idx))+size+sizeB)
		}
	})
	t.Run("tag list", func(t *testing.T) {
		tags := wantStatus(t, s.do(t, http.MethodGet, "/v2/"+name+"/tags/list", nil, nil, true), http.StatusOK)
		if !strings.Contains(tags, `"tags":["latest","multi","stable"]`) {
			t.Fatalf("tags: %s", tags)
		}
	})
	// Children of a live index cannot be deleted.
	must("children of a live index cannot be deleted", func(t *testing.T) {
		wantError(t, s.do(t, http.MethodDelete, "/v2/"+name+"/manifests/"+sha(b), nil, nil, true), http.StatusConflict, codeDenied)
	})
	// Deleting by digest removes the manifest and its tags.
	must("delete by digest removes the manifest and its tags", func(t *testing.T) {
		wantStatus(t, s.do(t, http.MethodDelete, "/v2/"+name+"/manifests/"+sha(idx), nil, nil, true), http.StatusAccepted)
		wantError(t, s.do(t, http.MethodGet, "/v2/"+name+"/manifests/multi", nil, nil, true), http.StatusNotFound, codeManifestUnknown)
		wantStatus(t, s.do(t, http.MethodDelete, "/v2/"+name+"/manifests/"+sha(b), nil, nil, true), http.StatusAccepted)
		tags := wantStatus(t, s.do(t, http.MethodGet, "/v2/"+name+"/tags/list", nil, nil, true), http.StatusOK)
		if !strings.Contains(tags, `"tags":[]`) {
			t.Fatalf("tags after delete: %s", tags)
		}
	})
	// Deleting a tag keeps the manifest.
	must("deleting a tag keeps the manifest", func(t *testing.T) {
		wantStatus(t, putManifest(s, t, name, "again", a, mtOCIManifest), http.StatusCreated)
		wantStatus(t, s.do(t, http.MethodDelete, "/v2/"+name+"/manifests/again", nil, nil, true), http.StatusAccepted)
		wantStatus(t, s.do(t, http.MethodHead, "/v2/"+name+"/manifests/"+sha(a), nil, nil, true), http.StatusOK)
	})
	// Soft deletes keep their attachments (the trash can restore them; GC
	// cannot take the bytes meanwhile).
	t.Run("soft deletes keep their attachments", func(t *testing.T) {
		var softWithoutAttachment int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM container_manifests cm WHERE cm.namespace_id = $1
		AND cm.soft_deleted_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM blob_storage_attachments x
		WHERE x.namespace_id = cm.namespace_id AND x.id = cm.blob_storage_attachment_id AND x.sha256 = cm.blob_sha256)`,
			tg.NamespaceID).Scan(&softWithoutAttachment); err != nil || softWithoutAttachment != 0 {
			t.Fatalf("soft-deleted manifests without attachment: %d %v", softWithoutAttachment, err)
		}
	})
}

func sha256Bytes(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

// TestTagPagination walks the tag list with n and last following Link.
func TestTagPagination(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.repo(t, "acme", "images", enum.FormatOCI, enum.VisibilityPrivate)
	const name = "acme/images/app"
	c := newBenchClient(t, s, name)
	body := testImage(t, c, "x")
	want := []string{}
	for i := range 25 {
		tag := fmt.Sprintf("t%02d", i)
		want = append(want, tag)
		wantStatus(t, putManifest(s, t, name, tag, body, mtOCIManifest), http.StatusCreated)
	}
	var got []string
	next := "/v2/" + name + "/tags/list?n=10"
	pages := 0
	for next != "" {
		resp := s.do(t, http.MethodGet, next, nil, nil, true)
		var tl struct{ Tags []string }
		_ = json.Unmarshal([]byte(wantStatus(t, resp, http.StatusOK)), &tl)
		got = append(got, tl.Tags...)
		pages++
		next = ""
		if l := resp.Header.Get("Link"); l != "" {
			next = strings.TrimSuffix(strings.TrimPrefix(strings.Split(l, ";")[0], "<"), ">")
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") || pages != 3 {
		t.Fatalf("%d pages: %v", pages, got)
	}
	if tl := wantStatus(t, s.do(t, http.MethodGet, "/v2/"+name+"/tags/list?n=0", nil, nil, true), http.StatusOK); !strings.Contains(tl, `"tags":[]`) {
		t.Fatalf("n=0: %s", tl)
	}
}

// TestManifestLimit: an image holds at most 25,000 manifests. A push
// counts the image's manifests once the image's folded count nears the
// limit (so it fails unless the fold keeps that count): another image of
// the repository, with few, still takes new ones.
func TestManifestLimit(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.repo(t, "acme", "images", enum.FormatOCI, enum.VisibilityPrivate)
	const name = "acme/images/app"
	c := newBenchClient(t, s, name)
	first := testImage(t, c, "first")
	wantStatus(t, putManifest(s, t, name, "first", first, mtOCIManifest), http.StatusCreated)
	ctx := context.Background()
	tg, err := container.New(s.Store).ResolveTarget(ctx, "acme", "images", "app")
	if err != nil {
		t.Fatal(err)
	}
	// Fill the image up to the limit with rows sharing the first payload.
	n := container.MaxManifestsPerImage - 1
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7())
	}
	if _, err := s.Store.Pool().Exec(ctx, `
		WITH att AS (
			INSERT INTO blob_storage_attachments (namespace_id, sha256)
			SELECT $1, $3::bytea FROM generate_series(1, $4::int) RETURNING id
		), numbered AS (SELECT id, row_number() OVER () AS i FROM att)
		INSERT INTO container_manifests (id, namespace_id, container_image_id, digest, media_type,
		                                 blob_storage_attachment_id, blob_sha256, size)
		SELECT u.id, $1, $2, sha256(int8send(u.i)), $5, a.id, $3::bytea, 1
		FROM unnest($6::uuid[]) WITH ORDINALITY AS u(id, i) JOIN numbered a ON a.i = u.i`,
		tg.NamespaceID, tg.ImageID, sha256Bytes(first), n, mtOCIManifest, ids); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.FoldCounterDeltas(ctx, tg.NamespaceID, 0, 0); err != nil {
		t.Fatal(err)
	}
	second := testImage(t, c, "second")
	e := wantError(t, putManifest(s, t, name, "second", second, mtOCIManifest), http.StatusForbidden, codeDenied)
	if !strings.Contains(fmt.Sprint(e["message"]), "25000") {
		t.Fatalf("limit message: %v", e)
	}
	// Re-pushing an existing manifest (a tag change) is still allowed.
	wantStatus(t, putManifest(s, t, name, "again", first, mtOCIManifest), http.StatusCreated)
	const other = "acme/images/other"
	o := newBenchClient(t, s, other)
	wantStatus(t, putManifest(s, t, other, "v1", testImage(t, o, "other"), mtOCIManifest), http.StatusCreated)
}

// TestLockTimeout503: a push that waits on a blob-row lock longer than the
// foreground lock timeout gets 503 with Retry-After, and succeeds once the
// lock is gone.
func TestLockTimeout503(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, serverOpts{store: store.Options{LockTimeout: 300 * time.Millisecond}})
	s.repo(t, "acme", "images", enum.FormatOCI, enum.VisibilityPrivate)
	const name = "acme/images/app"
	c := newBenchClient(t, s, name)
	body := testImage(t, c, "locked")
	c.pushBlob(body) // the payload's blob row exists: the push will lock it
	ctx := context.Background()
	tg, err := container.New(s.Store).ResolveTarget(ctx, "acme", "images", "app")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := s.Store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2 FOR UPDATE`,
		tg.NamespaceID, sha256Bytes(body)); err != nil {
		t.Fatal(err)
	}
	resp := putManifest(s, t, name, "v1", body, mtOCIManifest)
	if resp.Header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After: %v", resp.Header)
	}
	wantError(t, resp, http.StatusServiceUnavailable, codeTooManyRequests)
	_ = tx.Rollback(ctx)
	wantStatus(t, putManifest(s, t, name, "v1", body, mtOCIManifest), http.StatusCreated)
}

// TestConcurrentPushes: many clients pushing the same blobs and manifest
// into one image at once end with one row each, each with one attachment.
func TestConcurrentPushes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.repo(t, "acme", "images", enum.FormatOCI, enum.VisibilityPrivate)
	const name = "acme/images/app"
	c := newBenchClient(t, s, name)
	cfg := []byte(`{"os":"linux"}`)
	layer := bytes.Repeat([]byte("concurrent "), 1000)
	body, _ := json.Marshal(imageManifest(sha(cfg), sha(layer), int64(len(cfg)), int64(len(layer))))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for try := 0; ; try++ {
				c.pushBlob(cfg)
				c.pushBlob(layer)
				resp := putManifest(s, t, name, fmt.Sprintf("t%d", i), body, mtOCIManifest)
				readBody(t, resp)
				if resp.StatusCode == http.StatusServiceUnavailable && try < 5 {
					continue
				}
				if resp.StatusCode != http.StatusCreated {
					errs <- fmt.Errorf("push %d: %d", i, resp.StatusCode)
				}
				return
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	ctx := context.Background()
	tg, _ := container.New(s.Store).ResolveTarget(ctx, "acme", "images", "app")
	var manifests, blobs, tags, attachments int
	if err := s.Store.Pool().QueryRow(ctx, `SELECT
		(SELECT count(*) FROM container_manifests WHERE namespace_id = $1),
		(SELECT count(*) FROM container_blobs WHERE namespace_id = $1),
		(SELECT count(*) FROM container_tags WHERE namespace_id = $1),
		(SELECT count(*) FROM blob_storage_attachments WHERE namespace_id = $1)`, tg.NamespaceID).
		Scan(&manifests, &blobs, &tags, &attachments); err != nil {
		t.Fatal(err)
	}
	if manifests != 1 || blobs != 2 || tags != 8 || attachments != 3 {
		t.Fatalf("manifests %d blobs %d tags %d attachments %d; want 1 2 8 3", manifests, blobs, tags, attachments)
	}
}

// TestDockerMediaTypes: Docker schema 2 manifests and manifest lists are
// stored and served with their own media types (never a 415).
func TestDockerMediaTypes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.repo(t, "acme", "images", enum.FormatDocker, enum.VisibilityPrivate)
	const name = "acme/images/app"
	c := newBenchClient(t, s, name)
	cfg := []byte(`{"architecture":"amd64","os":"linux"}`)
	layer := []byte("docker layer")
	cd, ld := c.pushBlob(cfg), c.pushBlob(layer)
	m, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mtDockerManifest,
		"config": map[string]any{"mediaType": "application/vnd.docker.container.image.v1+json", "digest": cd, "size": len(cfg)},
		"layers": []any{map[string]any{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "digest": ld, "size": len(layer)}}})
	wantStatus(t, putManifest(s, t, name, "amd64", m, mtDockerManifest), http.StatusCreated)
	list, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mtDockerList, "manifests": []any{
		map[string]any{"mediaType": mtDockerManifest, "digest": sha(m), "size": len(m), "platform": map[string]string{"architecture": "amd64", "os": "linux"}},
	}})
	wantStatus(t, putManifest(s, t, name, "latest", list, mtDockerList), http.StatusCreated)
	for ref, want := range map[string]string{"amd64": mtDockerManifest, "latest": mtDockerList} {
		resp := s.do(t, http.MethodGet, "/v2/"+name+"/manifests/"+ref, nil, map[string]string{"Accept": mtDockerList + ", " + mtDockerManifest}, true)
		body := wantStatus(t, resp, http.StatusOK)
		if resp.Header.Get("Content-Type") != want || (ref == "latest" && body != string(list)) {
			t.Fatalf("%s: Content-Type %q", ref, resp.Header.Get("Content-Type"))
		}
	}
	// A Docker manifest cannot carry a subject.
	var withSubject map[string]any
	_ = json.Unmarshal(m, &withSubject)
	withSubject["subject"] = map[string]any{"mediaType": mtOCIManifest, "digest": sha(m), "size": len(m)}
	ws, _ := json.Marshal(withSubject)
	wantError(t, putManifest(s, t, name, "subject", ws, mtDockerManifest), http.StatusBadRequest, codeManifestInvalid)
}

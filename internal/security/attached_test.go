package security

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/testserver"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// TestManifestDetailsFollowTheRepositoryRule covers the fields of a
// container manifest that read more than its row: what is attached to it
// (referrers, subject), what its payload lists (layers, config blob,
// annotations) and its config's highlights. Every OCI repository of the
// world holds the same image (the same manifest digest); a signature is
// attached to it in the PRIVATE repository only. Each caller reads each
// repository's manifest: where it may pull, the details resolve and only
// the private repository's manifest has the signature; where it may not,
// nothing of the manifest is returned. The OCI referrers API of the other
// repositories does not list the signature either.
func TestManifestDetailsFollowTheRepositoryRule(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const private = "oci-private"
	subject := w.digest[private]
	name := testserver.Home + "/" + private + "/img"
	push := func(path, contentType string, body []byte) {
		t.Helper()
		if r := w.Do(http.MethodPost, "/v2/"+name+path, testserver.Basic(testserver.AdminToken), body, "Content-Type", contentType); r.Status != http.StatusCreated {
			t.Fatalf("push %s: %d %s", path, r.Status, r.Body)
		}
	}
	empty, note := []byte("{}"), []byte("signature of the shared image")
	push("/blobs/uploads/?digest="+testserver.SHA(empty), "application/octet-stream", empty)
	push("/blobs/uploads/?digest="+testserver.SHA(note), "application/octet-stream", note)
	sig, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"artifactType": "application/vnd.example.signature",
		"config":       map[string]any{"mediaType": "application/vnd.oci.empty.v1+json", "digest": testserver.SHA(empty), "size": 2},
		"layers":       []any{map[string]any{"mediaType": "application/octet-stream", "digest": testserver.SHA(note), "size": len(note)}},
		"subject":      map[string]any{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": subject, "size": 1}})
	if r := w.Do(http.MethodPut, "/v2/"+name+"/manifests/"+testserver.SHA(sig), testserver.Basic(testserver.AdminToken), sig,
		"Content-Type", "application/vnd.oci.image.manifest.v1+json"); r.Status != http.StatusCreated {
		t.Fatalf("attach: %d %s", r.Status, r.Body)
	}
	sigDigest := testserver.SHA(sig)

	const query = `query($r: String!, $d: String!, $s: String!) { repository(namespace: "` + testserver.Home + `", name: $r) {
		image(name: "img") {
			manifest(digest: $d) { digest referrers { digest artifactType } signatures: referrers(artifactType: "application/vnd.example.signature") { digest }
				compressedSize configBlob { digest } layers { digest } annotations { key } config { os architecture } parents { digest } }
			attached: manifest(digest: $s) { subject { digest } subjectDigest }
		} } }`
	cells := 0
	for _, c := range w.callers {
		if c.name == "garbage" {
			continue
		}
		for i := range w.targets {
			tg := &w.targets[i]
			if tg.format != enum.FormatOCI || tg.remote {
				continue // a cache's images are listed by its remote field
			}
			cells++
			cell := c.name + " on " + tg.repo
			b, _ := json.Marshal(map[string]any{"query": query, "variables": map[string]any{"r": tg.repo, "d": w.digest[tg.repo], "s": sigDigest}})
			authz := ""
			if c.secret != "" {
				authz = testserver.Bearer(c.secret)
			}
			r := w.Do(http.MethodPost, "/graphql", authz, b, "Content-Type", "application/json")
			var out struct {
				Data struct {
					Repository *struct {
						Image *struct {
							Manifest *struct {
								Digest    string
								Referrers []struct{ Digest, ArtifactType string }
								Signatures,
								Parents []struct{ Digest string }
								CompressedSize *int64
								ConfigBlob     *struct{ Digest string }
								Config         *struct{ Os, Architecture string }
							}
							Attached *struct {
								Subject       *struct{ Digest string }
								SubjectDigest string
							}
						}
					}
				}
				Errors []struct{ Message string }
			}
			if r.Status != http.StatusOK || json.Unmarshal([]byte(r.Body), &out) != nil {
				t.Errorf("%s: %d %s", cell, r.Status, r.Body)
				continue
			}
			if !allowed(pull, c.name, tg) {
				if out.Data.Repository != nil || strings.Contains(r.Body, sigDigest) || strings.Contains(r.Body, `"configBlob"`) {
					t.Errorf("%s: may not pull, got %s", cell, r.Body)
				}
				continue
			}
			img := out.Data.Repository
			if len(out.Errors) > 0 || img == nil || img.Image == nil || img.Image.Manifest == nil {
				t.Errorf("%s: %s", cell, r.Body)
				continue
			}
			m := img.Image.Manifest
			if m.ConfigBlob == nil || m.CompressedSize == nil || m.Config == nil || m.Config.Os != "linux" || len(m.Parents) != 0 {
				t.Errorf("%s: details %s", cell, r.Body)
			}
			if tg.repo == private {
				if len(m.Referrers) != 1 || m.Referrers[0].Digest != sigDigest || len(m.Signatures) != 1 ||
					img.Image.Attached == nil || img.Image.Attached.Subject == nil || img.Image.Attached.Subject.Digest != subject {
					t.Errorf("%s: the signature is not attached: %s", cell, r.Body)
				}
			} else if len(m.Referrers) != 0 || len(m.Signatures) != 0 || img.Image.Attached != nil || strings.Contains(r.Body, sigDigest) {
				t.Errorf("%s: another repository's signature leaks: %s", cell, r.Body)
			}
		}
	}
	// The OCI referrers API, as the super-user, on every other repository.
	for _, tg := range w.targets {
		if tg.format != enum.FormatOCI || tg.repo == private {
			continue
		}
		r := w.Do(http.MethodGet, "/v2/"+testserver.Home+"/"+tg.repo+"/img/referrers/"+subject, testserver.Basic(testserver.AdminToken), nil)
		if r.Status != http.StatusOK || strings.Contains(r.Body, sigDigest) {
			t.Errorf("referrers of %s: %d %s", tg.repo, r.Status, r.Body)
		}
	}
	t.Logf("%d cells", cells)
}

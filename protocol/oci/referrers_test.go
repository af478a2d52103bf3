package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

type referrersAnswer struct {
	SchemaVersion int
	MediaType     string
	Manifests     []struct {
		MediaType    string
		Digest       string
		Size         int64
		ArtifactType string
		Annotations  map[string]string
	}
}

// attachTo pushes an artifact manifest whose subject is the given
// manifest (what `oras attach` pushes) and returns its digest and body.
func attachTo(t *testing.T, s *testServer, c *benchClient, name, artifactType string, subject []byte, note string) (string, []byte) {
	t.Helper()
	empty := c.pushBlob([]byte("{}"))
	layer := c.pushBlob([]byte(note))
	body, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": mtOCIManifest, "artifactType": artifactType,
		"config":      map[string]any{"mediaType": "application/vnd.oci.empty.v1+json", "digest": empty, "size": 2},
		"layers":      []any{map[string]any{"mediaType": "application/octet-stream", "digest": layer, "size": len(note)}},
		"subject":     map[string]any{"mediaType": mtOCIManifest, "digest": sha(subject), "size": len(subject)},
		"annotations": map[string]string{"org.example.note": note},
	})
	resp := putManifest(s, t, name, sha(body), body, mtOCIManifest)
	wantStatus(t, resp, http.StatusCreated)
	if got := resp.Header.Get("OCI-Subject"); got != sha(subject) {
		t.Fatalf("OCI-Subject %q, want %s", got, sha(subject))
	}
	return sha(body), body
}

func (s *testServer) referrers(t *testing.T, path string) (referrersAnswer, http.Header) {
	t.Helper()
	resp := s.do(t, http.MethodGet, path, nil, nil, true)
	body := wantStatus(t, resp, http.StatusOK)
	if ct := resp.Header.Get("Content-Type"); ct != mtOCIIndex {
		t.Fatalf("%s: Content-Type %q", path, ct)
	}
	var idx referrersAnswer
	if err := json.Unmarshal([]byte(body), &idx); err != nil || idx.SchemaVersion != 2 || idx.MediaType != mtOCIIndex || idx.Manifests == nil {
		t.Fatalf("%s: %v %s", path, err, body)
	}
	return idx, resp.Header
}

func digestsOf(idx referrersAnswer) []string {
	var out []string
	for _, m := range idx.Manifests {
		out = append(out, m.Digest)
	}
	return out
}

var nextLinkRE = regexp.MustCompile(`^<([^>]+)>; rel="next"$`)

// TestReferrers: the referrers of a manifest are the image's manifests
// whose subject it is, by digest, with their payload size, artifact type
// and annotations; artifactType filters (OCI-Filters-Applied), n and the
// Link header page through them, a manifest of another image with the
// same subject and a deleted referrer are not listed, and an unknown
// digest answers an empty index. A referrer stored before subjects were
// recorded (its row not yet backfilled) is found by reading its payload,
// and once recorded by the index.
func TestReferrers(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.repo(t, "acme", "images", enum.FormatOCI, enum.VisibilityPrivate)
	const name = "acme/images/app"
	c := newBenchClient(t, s, name)
	subject := testImage(t, c, "the subject")
	wantStatus(t, putManifest(s, t, name, "v1", subject, mtOCIManifest), http.StatusCreated)
	const sigType, sbomType = "application/vnd.example.signature", "application/vnd.example.sbom"
	want := map[string][]byte{}
	sig1, b := attachTo(t, s, c, name, sigType, subject, "first signature")
	want[sig1] = b
	sig2, b := attachTo(t, s, c, name, sigType, subject, "second signature")
	want[sig2] = b
	sbom, b := attachTo(t, s, c, name, sbomType, subject, "sbom")
	want[sbom] = b
	gone, _ := attachTo(t, s, c, name, sigType, subject, "deleted signature")
	wantStatus(t, s.do(t, http.MethodDelete, "/v2/"+name+"/manifests/"+gone, nil, nil, true), http.StatusAccepted)
	// Another image of the repository attaches to the same digest.
	other := newBenchClient(t, s, "acme/images/other")
	attachTo(t, s, other, "acme/images/other", sigType, subject, "elsewhere")

	base := "/v2/" + name + "/referrers/" + sha(subject)
	idx, hdr := s.referrers(t, base)
	got := digestsOf(idx)
	if len(got) != 3 || !(got[0] < got[1] && got[1] < got[2]) || hdr.Get("OCI-Filters-Applied") != "" || hdr.Get("Link") != "" {
		t.Fatalf("referrers %v, headers %v", got, hdr)
	}
	for _, m := range idx.Manifests {
		body, ok := want[m.Digest]
		if !ok || m.Size != int64(len(body)) || m.MediaType != mtOCIManifest || m.Annotations["org.example.note"] == "" {
			t.Errorf("referrer %+v", m)
		}
		if wantType := map[string]string{sig1: sigType, sig2: sigType, sbom: sbomType}[m.Digest]; m.ArtifactType != wantType {
			t.Errorf("%s: artifactType %q, want %q", m.Digest, m.ArtifactType, wantType)
		}
	}

	idx, hdr = s.referrers(t, base+"?artifactType="+url.QueryEscape(sigType))
	if got := digestsOf(idx); len(got) != 2 || hdr.Get("OCI-Filters-Applied") != "artifactType" {
		t.Fatalf("filtered: %v %v", got, hdr)
	}

	// Pages of one, following Link.
	var walked []string
	next := base + "?n=1"
	for next != "" {
		idx, hdr = s.referrers(t, next)
		walked = append(walked, digestsOf(idx)...)
		next = ""
		if l := hdr.Get("Link"); l != "" {
			m := nextLinkRE.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("Link %q", l)
			}
			next = m[1]
		}
		if len(walked) > 5 {
			t.Fatalf("paging does not end: %v", walked)
		}
	}
	if strings.Join(walked, ",") != strings.Join(got, ",") {
		t.Fatalf("paged %v, want %v", walked, got)
	}
	idx, hdr = s.referrers(t, base+"?n=1&artifactType="+url.QueryEscape(sbomType))
	if d := digestsOf(idx); len(d) != 1 || d[0] != sbom || hdr.Get("Link") != "" {
		t.Fatalf("one page of SBOMs: %v %v", d, hdr)
	}

	// No referrers: an empty index, also for a digest nothing has.
	for _, d := range []string{sha(want[sig1]), "sha256:" + strings.Repeat("0", 64)} {
		if idx, _ := s.referrers(t, "/v2/"+name+"/referrers/"+d); len(idx.Manifests) != 0 {
			t.Fatalf("referrers of %s: %+v", d, idx.Manifests)
		}
	}
	// A malformed digest and a bad page size are refused in the spec's format.
	resp := s.do(t, http.MethodGet, "/v2/"+name+"/referrers/sha256:zz", nil, nil, true)
	if body := readBody(t, resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "DIGEST_INVALID") {
		t.Fatalf("malformed digest: %d %s", resp.StatusCode, body)
	}
	resp = s.do(t, http.MethodGet, base+"?n=-1", nil, nil, true)
	if body := readBody(t, resp); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("n=-1: %d %s", resp.StatusCode, body)
	}

	// The SBOM as a row stored before subjects were recorded: still a
	// referrer (read from its payload), with its artifact type and filter.
	ctx := context.Background()
	tg, err := container.New(s.Store).ResolveTarget(ctx, "acme", "images", "app")
	if err != nil {
		t.Fatal(err)
	}
	tag, err := s.Store.Pool().Exec(ctx, `UPDATE container_manifests SET subject_digest = NULL, artifact_type = NULL, subject_recorded = false
		WHERE namespace_id = $1 AND container_image_id = $2 AND digest = $3`, tg.NamespaceID, tg.ImageID, sha256Bytes(want[sbom]))
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("unrecord the SBOM: %v %v", tag, err)
	}
	idx, _ = s.referrers(t, base)
	if d := digestsOf(idx); strings.Join(d, ",") != strings.Join(got, ",") {
		t.Fatalf("with an unrecorded referrer: %v, want %v", d, got)
	}
	idx, _ = s.referrers(t, base+"?artifactType="+url.QueryEscape(sbomType))
	if len(idx.Manifests) != 1 || idx.Manifests[0].Digest != sbom || idx.Manifests[0].ArtifactType != sbomType {
		t.Fatalf("unrecorded SBOM by type: %+v", idx.Manifests)
	}
	idx, _ = s.referrers(t, base+"?artifactType="+url.QueryEscape(sigType))
	if len(idx.Manifests) != 2 {
		t.Fatalf("signatures beside an unrecorded SBOM: %+v", idx.Manifests)
	}
	// What the backfill records for it is what the push recorded.
	subj, typ, err := ManifestSubject(mtOCIManifest, want[sbom])
	if err != nil || subj == nil || fmt.Sprintf("sha256:%x", *subj) != sha(subject) || typ != sbomType {
		t.Fatalf("ManifestSubject: %v %q %v", subj, typ, err)
	}
	var id uuid.UUID
	if err := s.Store.Pool().QueryRow(ctx, `SELECT id FROM container_manifests WHERE namespace_id = $1 AND digest = $2`,
		tg.NamespaceID, sha256Bytes(want[sbom])).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if n, err := container.New(s.Store).RecordSubjects(ctx, tg.NamespaceID, []container.RecordedSubject{{ManifestID: id, Subject: subj, ArtifactType: typ}}); err != nil || n != 1 {
		t.Fatalf("record: %d %v", n, err)
	}
	idx, _ = s.referrers(t, base+"?artifactType="+url.QueryEscape(sbomType))
	if len(idx.Manifests) != 1 || idx.Manifests[0].Digest != sbom {
		t.Fatalf("recorded SBOM: %+v", idx.Manifests)
	}
}

// TestArtifactTypeValidated: a manifest's artifactType must be a media
// type (it is recorded, at most 255 bytes), refused in the spec's format.
func TestArtifactTypeValidated(t *testing.T) {
	t.Parallel()
	for _, at := range []string{"not a media type", "application/" + strings.Repeat("x", 250)} {
		body, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mtOCIManifest, "artifactType": at,
			"config": map[string]any{"mediaType": "application/vnd.oci.empty.v1+json", "digest": sha([]byte("{}")), "size": 2},
			"layers": []any{}})
		if _, aerr := parseManifest(mtOCIManifest, body); aerr == nil || aerr.Code != codeManifestInvalid || !strings.Contains(aerr.Message, "artifactType") {
			t.Errorf("artifactType %.30q: %+v", at, aerr)
		}
	}
}

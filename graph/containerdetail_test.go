package graph

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/protocol/oci"
)

// ociAPI is the GraphQL API next to the real OCI protocol on one server,
// over one store with file:// object storage: images are pushed the way
// clients push them, then read through GraphQL.
type ociAPI struct {
	*testAPI
}

func newOCIAPI(t testing.TB) *ociAPI {
	t.Helper()
	api := newStoreAPI(t, true)
	quiet := testsupport.Discard()
	r := mux.NewRouter()
	authn := auth.New(api.st, auth.Options{AdminToken: adminToken, Logger: quiet})
	Mount(r, api.st, Options{Auth: authn, Logger: testsupport.Errors()})
	oci.Mount(r, api.st, oci.Options{Auth: authn, Logger: quiet})
	api.serve(r)
	return &ociAPI{testAPI: api}
}

func (a *ociAPI) ociDo(method, path, contentType string, body []byte) (int, []byte) {
	a.t.Helper()
	req, _ := http.NewRequest(method, a.srv.URL+path, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func ociDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// blob pushes a blob and returns its descriptor.
func (a *ociAPI) blob(name, mediaType string, b []byte) map[string]any {
	a.t.Helper()
	d := ociDigest(b)
	if st, body := a.ociDo(http.MethodPost, "/v2/"+name+"/blobs/uploads/?digest="+d, "application/octet-stream", b); st != http.StatusCreated {
		a.t.Fatalf("push blob: %d %s", st, body)
	}
	return map[string]any{"mediaType": mediaType, "digest": d, "size": len(b)}
}

// manifest pushes a manifest under ref (a tag, or "" for its digest) and
// returns its digest and payload size.
func (a *ociAPI) manifest(name, ref string, m map[string]any) (string, int) {
	a.t.Helper()
	b, _ := json.Marshal(m)
	d := ociDigest(b)
	if ref == "" {
		ref = d
	}
	if st, body := a.ociDo(http.MethodPut, "/v2/"+name+"/manifests/"+ref, m["mediaType"].(string), b); st != http.StatusCreated {
		a.t.Fatalf("push manifest: %d %s", st, body)
	}
	return d, len(b)
}

const (
	mtIndex    = "application/vnd.oci.image.index.v1+json"
	mtManifest = "application/vnd.oci.image.manifest.v1+json"
	mtConfig   = "application/vnd.oci.image.config.v1+json"
	mtLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
	mtEmpty    = "application/vnd.oci.empty.v1+json"
	sigType    = "application/vnd.cncf.notary.signature"
	sbomType   = "application/spdx+json"
)

// pushPlatform pushes an image manifest for one platform: a config with
// highlights and the given layers.
func (a *ociAPI) pushPlatform(name, arch, variant string, layers ...[]byte) (string, int, int64) {
	a.t.Helper()
	cfg, _ := json.Marshal(map[string]any{
		"created": "2026-10-30T08:00:00Z", "architecture": arch, "os": "linux", "variant": variant,
		"config": map[string]any{"Entrypoint": []string{"/bin/app"}, "Cmd": []string{"--port", "8080"}, "WorkingDir": "/srv",
			"User": "app", "ExposedPorts": map[string]any{"8080/tcp": map[string]any{}},
			"Labels": map[string]string{"org.opencontainers.image.source": "https://example.test/app", "note": `<b>bold</b>`}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{}},
	})
	config := a.blob(name, mtConfig, cfg)
	total := int64(len(cfg))
	var ls []any
	for _, l := range layers {
		ls = append(ls, a.blob(name, mtLayer, l))
		total += int64(len(l))
	}
	d, n := a.manifest(name, "", map[string]any{"schemaVersion": 2, "mediaType": mtManifest, "config": config, "layers": ls})
	return d, n, total
}

// attach pushes an artifact whose subject is the manifest subject (what
// `oras attach` pushes).
func (a *ociAPI) attach(name, artifactType, subject string, subjectSize int, content string) string {
	a.t.Helper()
	empty := a.blob(name, mtEmpty, []byte("{}"))
	layer := a.blob(name, "application/octet-stream", []byte(content))
	layer["annotations"] = map[string]string{"org.opencontainers.image.title": "payload.bin"}
	d, _ := a.manifest(name, "", map[string]any{"schemaVersion": 2, "mediaType": mtManifest, "artifactType": artifactType,
		"config": empty, "layers": []any{layer},
		"subject":     map[string]any{"mediaType": mtIndex, "digest": subject, "size": subjectSize},
		"annotations": map[string]string{"org.opencontainers.image.created": "2026-10-30T09:00:00Z"}})
	return d
}

type detailManifest struct {
	Digest         string
	MediaType      string
	ArtifactType   *string
	Size           int64
	SubjectDigest  *string
	Subject        *struct{ Digest string }
	CompressedSize *int64
	ConfigBlob     *struct {
		Digest    string
		MediaType string
		Size      int64
	}
	Config *struct {
		Created      *string
		Os           *string
		Architecture *string
		Variant      *string
		Entrypoint   []string
		Cmd          []string
		WorkingDir   *string
		User         *string
		ExposedPorts []string
		Labels       []struct{ Key, Value string }
	}
	Layers []struct {
		Digest    string
		MediaType string
		Size      int64
		Title     *string
	}
	IndexEntries []struct {
		Digest   string
		Size     int64
		Platform *struct {
			Os, Architecture string
			Variant          *string
		}
		Manifest *struct {
			Digest string
			Size   int64
		}
	}
	Annotations []struct{ Key, Value string }
	Parents     []struct{ Digest string }
	Referrers   []struct {
		Digest       string
		ArtifactType *string
	}
	Signatures []struct{ Digest string }
}

const detailFields = `digest mediaType artifactType size subjectDigest subject { digest } compressedSize
	configBlob { digest mediaType size }
	config { created os architecture variant entrypoint cmd workingDir user exposedPorts labels { key value } }
	layers { digest mediaType size title }
	indexEntries { digest size platform { os architecture variant } manifest { digest size } }
	annotations { key value } parents { digest } referrers { digest artifactType }
	signatures: referrers(artifactType: "` + sigType + `") { digest }`

func (a *ociAPI) detail(repo, image, digest string) (*detailManifest, *gqlResponse) {
	a.t.Helper()
	r := a.post(adminToken, `query($r: String!, $i: String!, $d: String!) { repository(namespace: "detail", name: $r) {
		image(name: $i) { manifest(digest: $d) { `+detailFields+` } } } }`, map[string]any{"r": repo, "i": image, "d": digest})
	var out struct {
		Repository struct {
			Image struct{ Manifest *detailManifest }
		}
	}
	mustJSON(a.t, r.Data, &out)
	return out.Repository.Image.Manifest, r
}

// TestContainerManifestDetails pushes a two-platform index over the OCI
// API, a signature attached to the index and an SBOM attached to one
// platform, and reads what the image page shows: platforms with each
// child's size, layers with sizes and media types, config highlights,
// compressed size, subject and referrers (filtered by artifact type), and
// the index parents of a child.
func TestContainerManifestDetails(t *testing.T) {
	t.Parallel()
	a := newOCIAPI(t)
	a.createNamespace("detail")
	a.createRepository("detail", "images", "OCI", "PRIVATE")
	const name = "detail/images/app"
	amd, amdSize, amdBlobs := a.pushPlatform(name, "amd64", "", []byte(strings.Repeat("a", 3000)), []byte(strings.Repeat("b", 700)))
	arm, armSize, armBlobs := a.pushPlatform(name, "arm64", "v8", []byte(strings.Repeat("c", 2000)))
	index, indexSize := a.manifest(name, "v1", map[string]any{"schemaVersion": 2, "mediaType": mtIndex, "manifests": []any{
		map[string]any{"mediaType": mtManifest, "digest": amd, "size": amdSize, "platform": map[string]any{"os": "linux", "architecture": "amd64"}},
		map[string]any{"mediaType": mtManifest, "digest": arm, "size": armSize, "platform": map[string]any{"os": "linux", "architecture": "arm64", "variant": "v8"}},
	}})
	sig := a.attach(name, sigType, index, indexSize, "signature bytes")
	sbom := a.attach(name, sbomType, amd, amdSize, `{"spdxVersion":"SPDX-2.3"}`)

	idx, r := a.detail("images", "app", index)
	if len(r.Errors) > 0 || idx == nil {
		t.Fatalf("index: %+v %s", r.Errors, r.Data)
	}
	if idx.CompressedSize != nil || idx.Layers != nil || idx.Config != nil || idx.ConfigBlob != nil || idx.ArtifactType != nil {
		t.Errorf("index has image fields: %+v", idx)
	}
	if len(idx.IndexEntries) != 2 {
		t.Fatalf("index entries: %+v", idx.IndexEntries)
	}
	e0, e1 := idx.IndexEntries[0], idx.IndexEntries[1]
	if e0.Digest != amd || e0.Platform == nil || e0.Platform.Os != "linux" || e0.Platform.Architecture != "amd64" || e0.Platform.Variant != nil ||
		e0.Manifest == nil || e0.Manifest.Size != int64(amdSize)+amdBlobs || e0.Size != int64(amdSize) {
		t.Errorf("amd64 entry: %+v", e0)
	}
	if e1.Platform == nil || e1.Platform.Variant == nil || *e1.Platform.Variant != "v8" || e1.Manifest == nil || e1.Manifest.Size != int64(armSize)+armBlobs {
		t.Errorf("arm64 entry: %+v", e1)
	}
	if idx.Size != int64(indexSize)+e0.Manifest.Size+e1.Manifest.Size {
		t.Errorf("index tree size %d", idx.Size)
	}
	if len(idx.Referrers) != 1 || idx.Referrers[0].Digest != sig || idx.Referrers[0].ArtifactType == nil || *idx.Referrers[0].ArtifactType != sigType ||
		len(idx.Signatures) != 1 {
		t.Errorf("index referrers: %+v, signatures %+v", idx.Referrers, idx.Signatures)
	}

	img, r := a.detail("images", "app", amd)
	if len(r.Errors) > 0 || img == nil {
		t.Fatalf("amd64: %+v %s", r.Errors, r.Data)
	}
	if img.CompressedSize == nil || *img.CompressedSize != amdBlobs || img.IndexEntries != nil {
		t.Errorf("amd64 compressed size %v (want %d), entries %v", img.CompressedSize, amdBlobs, img.IndexEntries)
	}
	if len(img.Layers) != 2 || img.Layers[0].Size != 3000 || img.Layers[0].MediaType != mtLayer || img.Layers[1].Size != 700 {
		t.Errorf("amd64 layers: %+v", img.Layers)
	}
	c := img.Config
	if c == nil || c.Created == nil || *c.Created != "2026-10-30T08:00:00Z" || *c.Os != "linux" || *c.Architecture != "amd64" ||
		strings.Join(c.Entrypoint, " ") != "/bin/app" || strings.Join(c.Cmd, " ") != "--port 8080" || *c.WorkingDir != "/srv" ||
		*c.User != "app" || strings.Join(c.ExposedPorts, ",") != "8080/tcp" || len(c.Labels) != 2 ||
		c.Labels[0].Key != "note" || c.Labels[0].Value != "<b>bold</b>" {
		t.Errorf("amd64 config: %+v", c)
	}
	if img.ConfigBlob == nil || img.ConfigBlob.MediaType != mtConfig || img.ArtifactType == nil || *img.ArtifactType != mtConfig {
		t.Errorf("amd64 config blob %+v, artifact type %v", img.ConfigBlob, img.ArtifactType)
	}
	if len(img.Parents) != 1 || img.Parents[0].Digest != index {
		t.Errorf("amd64 parents: %+v", img.Parents)
	}
	if len(img.Referrers) != 1 || img.Referrers[0].Digest != sbom || len(img.Signatures) != 0 {
		t.Errorf("amd64 referrers %+v, signatures %+v", img.Referrers, img.Signatures)
	}

	art, r := a.detail("images", "app", sig)
	if len(r.Errors) > 0 || art == nil {
		t.Fatalf("signature: %+v %s", r.Errors, r.Data)
	}
	if art.SubjectDigest == nil || *art.SubjectDigest != index || art.Subject == nil || art.Subject.Digest != index ||
		art.ArtifactType == nil || *art.ArtifactType != sigType || art.Config != nil || art.ConfigBlob == nil ||
		len(art.Layers) != 1 || art.Layers[0].Title == nil || *art.Layers[0].Title != "payload.bin" ||
		len(art.Annotations) != 1 || art.Annotations[0].Key != "org.opencontainers.image.created" {
		t.Errorf("signature: %+v", art)
	}

	// An unknown digest is null; a malformed one is INVALID_INPUT.
	if m, r := a.detail("images", "app", "sha256:"+strings.Repeat("0", 64)); m != nil || len(r.Errors) > 0 {
		t.Errorf("unknown digest: %+v %+v", m, r.Errors)
	}
	a.expectError(adminToken, `{ repository(namespace: "detail", name: "images") { image(name: "app") { manifest(digest: "sha256:zz") { digest } } } }`,
		nil, CodeInvalidInput)
}

// TestContainerConfigErrors: a config blob that is not a valid image
// configuration, and one too large to read, make the config field null
// with an error that says why; the rest of the manifest still resolves.
func TestContainerConfigErrors(t *testing.T) {
	t.Parallel()
	a := newOCIAPI(t)
	a.createNamespace("detail")
	a.createRepository("detail", "images", "OCI", "PRIVATE")
	const name = "detail/images/odd"
	layer := a.blob(name, mtLayer, []byte("layer"))
	push := func(cfg []byte) string {
		d, _ := a.manifest(name, "", map[string]any{"schemaVersion": 2, "mediaType": mtManifest,
			"config": a.blob(name, mtConfig, cfg), "layers": []any{layer}})
		return d
	}
	cases := []struct {
		name, code, message string
		config              []byte
	}{
		{"wrong type", CodeInvalidInput, "config.Cmd is not a []string", []byte(`{"config":{"Cmd":"not a list"}}`)},
		{"not JSON", CodeInvalidInput, "is not a valid image configuration", []byte(`<html>`)},
		{"too large", "TOO_LARGE", "at most 1048576 are read", bytes.Repeat([]byte(" "), 1<<20+1)},
	}
	for _, c := range cases {
		d := push(c.config)
		m, r := a.detail("images", "odd", d)
		if m == nil || m.Config != nil || len(m.Layers) != 1 || m.CompressedSize == nil {
			t.Errorf("%s: manifest %+v", c.name, m)
			continue
		}
		if len(r.Errors) != 1 || r.code() != c.code || !strings.Contains(r.Errors[0].Message, c.message) ||
			fmt.Sprint(r.Errors[0].Path) != "[repository image manifest config]" {
			t.Errorf("%s: errors %+v", c.name, r.Errors)
		}
	}
}

// TestNoNPlusOneManifestDetails: listing an image's manifests with every
// field read from payloads and configs, subjects, referrers and parents
// runs the same number of SQL statements for 3 platforms as for 12.
func TestNoNPlusOneManifestDetails(t *testing.T) {
	t.Parallel()
	a := newOCIAPI(t)
	a.createNamespace("detail")
	a.createRepository("detail", "images", "OCI", "PRIVATE")
	seed := func(image string, n int) {
		name := "detail/images/" + image
		var entries []any
		for i := 0; i < n; i++ {
			d, size, _ := a.pushPlatform(name, fmt.Sprintf("arch%d", i), "", []byte(fmt.Sprintf("%s layer %d", image, i)))
			entries = append(entries, map[string]any{"mediaType": mtManifest, "digest": d, "size": size,
				"platform": map[string]any{"os": "linux", "architecture": fmt.Sprintf("arch%d", i)}})
			a.attach(name, sbomType, d, size, fmt.Sprintf("sbom %d", i))
		}
		index, size := a.manifest(name, "v1", map[string]any{"schemaVersion": 2, "mediaType": mtIndex, "manifests": entries})
		a.attach(name, sigType, index, size, "signature")
	}
	seed("small", 3)
	seed("large", 12)
	query := `query($i: String!) { repository(namespace: "detail", name: "images") { image(name: $i) {
		manifests(first: 30) { edges { node { ` + detailFields + ` } } } } } }`
	count := func(image string, platforms int) int64 {
		want := 2*platforms + 2 // platforms, their SBOMs, the index and its signature
		n, r := a.countStatements(t, adminToken, query, map[string]any{"i": image})
		var out struct {
			Repository struct {
				Image struct {
					Manifests struct {
						Edges []struct{ Node detailManifest }
					}
				}
			}
		}
		mustJSON(t, r.Data, &out)
		edges := out.Repository.Image.Manifests.Edges
		if len(edges) != want {
			t.Fatalf("%s: %d manifests, want %d", image, len(edges), want)
		}
		configs, subjects := 0, 0
		for _, e := range edges {
			if e.Node.Config != nil {
				configs++
			}
			if e.Node.Subject != nil {
				subjects++
			}
		}
		if configs != platforms || subjects != platforms+1 {
			t.Fatalf("%s: %d configs and %d subjects of %d manifests", image, configs, subjects, want)
		}
		return n
	}
	small, large := count("small", 3), count("large", 12)
	t.Logf("manifest details: %d statements for 3 platforms, %d for 12", small, large)
	if small != large {
		t.Fatalf("manifest details ran %d statements for 3 platforms and %d for 12: one per row somewhere", small, large)
	}
}

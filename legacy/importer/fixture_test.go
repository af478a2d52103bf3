package importer_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/legacy/importer"
	"github.com/artifact-registry/artifact-registry/legacy/inventory"
	"github.com/artifact-registry/artifact-registry/legacy/legacytest"
	"github.com/artifact-registry/artifact-registry/legacy/mapping"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/legacy"
)

func TestMain(m *testing.M) { testdb.Main(m) }

var fixtures legacytest.Fixtures

// tree is what the fixture registry holds (digests as "sha256:...").
type tree struct {
	App                     map[string]string   // good/app tag -> manifest digest
	AppLayers               map[string][]string // good/app tag -> layer digests
	Nested                  string              // nested/team/app:v1
	MultiA, MultiB, MultiIx string              // idx/multi a, b, idx
	Foreign                 string              // misc/foreign:v1
	ForeignLayer            string
	Subject, Referrer       string // misc/referrer:v1 and its untagged referrer
	Uploads                 string // misc/uploads:v1
}

// manifestOf fetches a manifest's layer digests with crane.
func layersOf(t testing.TB, ref string) []string {
	var m struct {
		Layers []struct{ Digest string } `json:"layers"`
	}
	if err := json.Unmarshal([]byte(legacytest.Crane(t, "manifest", ref)), &m); err != nil {
		t.Fatalf("manifest %s: %v", ref, err)
	}
	var out []string
	for _, l := range m.Layers {
		out = append(out, l.Digest)
	}
	return out
}

// buildTree pushes the matrix's repositories into a real registry of the
// given version on filesystem storage at dir, then stops it.
func buildTree(v legacytest.Version, full bool) func(t testing.TB, dir string) any {
	return func(t testing.TB, dir string) any {
		host, stop := legacytest.StartRegistryVersion(t, v, dir)
		defer stop()
		tr := &tree{App: map[string]string{}, AppLayers: map[string][]string{}}
		tr.App["v1"] = legacytest.PushImage(t, host, "good/app", "v1", legacytest.Image{Layers: 1, Seed: 1})
		tr.App["v2"] = legacytest.PushImage(t, host, "good/app", "v2", legacytest.Image{Layers: 2, Seed: 2, OCI: true})
		legacytest.Crane(t, "tag", host+"/good/app:v2", "latest")
		tr.App["latest"] = tr.App["v2"]
		for _, tag := range []string{"v1", "v2"} {
			tr.AppLayers[tag] = layersOf(t, host+"/good/app:"+tag)
		}
		tr.Nested = legacytest.PushImage(t, host, "nested/team/app", "v1", legacytest.Image{Seed: 3})
		tr.MultiA = legacytest.PushImage(t, host, "idx/multi", "a", legacytest.Image{Seed: 4})
		tr.MultiB = legacytest.PushImage(t, host, "idx/multi", "b", legacytest.Image{Seed: 5})
		tr.MultiIx = legacytest.PushIndex(t, host, "idx/multi", "idx", host+"/idx/multi@"+tr.MultiA, host+"/idx/multi@"+tr.MultiB)
		if !full {
			return tr
		}
		// A Windows-style image: its base layer is foreign (URLs, bytes
		// outside the registry), only the config is pushed.
		cfg := []byte(`{"architecture":"amd64","os":"windows","rootfs":{"type":"layers","diff_ids":[]}}`)
		cfgDigest := legacytest.PushBlob(t, host, "misc/foreign", cfg)
		tr.ForeignLayer = "sha256:" + strings.Repeat("ab", 32)
		foreign, _ := json.Marshal(map[string]any{
			"schemaVersion": 2,
			"mediaType":     "application/vnd.docker.distribution.manifest.v2+json",
			"config":        map[string]any{"mediaType": "application/vnd.docker.container.image.v1+json", "digest": cfgDigest, "size": len(cfg)},
			"layers": []any{map[string]any{"mediaType": "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
				"digest": tr.ForeignLayer, "size": 1234, "urls": []string{"https://example.invalid/base.tar.gz"}}},
		})
		tr.Foreign = legacytest.PutManifest(t, host, "misc/foreign", "v1", "application/vnd.docker.distribution.manifest.v2+json", foreign)
		// An untagged referrer (an SBOM-like artifact) of a tagged image.
		tr.Subject = legacytest.PushImage(t, host, "misc/referrer", "v1", legacytest.Image{Seed: 6, OCI: true})
		subjectSize := len(legacytest.Crane(t, "manifest", host+"/misc/referrer:v1"))
		empty := legacytest.PushBlob(t, host, "misc/referrer", []byte("{}"))
		sbom := []byte(`{"sbom":"fixture"}`)
		sbomDigest := legacytest.PushBlob(t, host, "misc/referrer", sbom)
		ref, _ := json.Marshal(map[string]any{
			"schemaVersion": 2,
			"mediaType":     "application/vnd.oci.image.manifest.v1+json",
			"artifactType":  "application/vnd.example.sbom+json",
			"config":        map[string]any{"mediaType": "application/vnd.oci.empty.v1+json", "digest": empty, "size": 2},
			"layers":        []any{map[string]any{"mediaType": "application/vnd.example.sbom+json", "digest": sbomDigest, "size": len(sbom)}},
			"subject":       map[string]any{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": tr.Subject, "size": subjectSize},
		})
		tr.Referrer = legacytest.PutManifest(t, host, "misc/referrer", "", "application/vnd.oci.image.manifest.v1+json", ref)
		tr.Uploads = legacytest.PushImage(t, host, "misc/uploads", "v1", legacytest.Image{Seed: 7})
		legacytest.StartUpload(t, host, "misc/uploads")
		legacytest.PushBlob(t, host, "misc/blobonly", []byte("only a blob"))
		legacytest.PushImage(t, host, "solo", "v1", legacytest.Image{Seed: 8})
		return tr
	}
}

// rules maps <repository>/<image...> into namespace "legacy"; single
// component paths ("solo") are unmapped.
const rules = `
prefixes:
  - prefix: ""
    namespace: legacy
    repositoryFromPath: true
`

// env is one test's copy of a fixture tree and a fresh database and bucket.
type env struct {
	st   *store.Store
	src  *blob.Bucket
	dir  string // the copied registry root directory
	tree *tree
}

func newEnv(t *testing.T, v legacytest.Version, full bool) *env {
	t.Helper()
	name := "matrix-" + string(v)
	if !full {
		name += "-small"
	}
	dir, meta := fixtures.Get(t, name, buildTree(v, full))
	e := &env{dir: filepath.Join(t.TempDir(), "legacy"), tree: meta.(*tree)}
	legacytest.CopyTree(t, dir, e.dir)
	var err error
	if e.src, err = fileblob.OpenBucket(e.dir, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.src.Close() })
	e.st = testsupport.Store(t, testsupport.StoreOptions{})
	testsupport.Namespace(t, e.st, "legacy")
	return e
}

func (e *env) inventory(t *testing.T) *inventory.Result {
	t.Helper()
	r, err := mapping.Parse([]byte(rules))
	if err != nil {
		t.Fatal(err)
	}
	res, err := inventory.Run(context.Background(), e.st, e.src, r)
	if err != nil {
		t.Fatalf("inventory: %v", err)
	}
	return res
}

func (e *env) row(t *testing.T, path string) *legacy.Repository {
	t.Helper()
	r, err := legacy.New(e.st).RepositoryByPath(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (e *env) pre(t *testing.T, path string) (*importer.Report, error) {
	t.Helper()
	return importer.PreImport(context.Background(), e.st, e.src, *e.row(t, path))
}

func (e *env) final(t *testing.T, path string) (*importer.Report, error) {
	t.Helper()
	return importer.FinalImport(context.Background(), e.st, e.src, *e.row(t, path), farFuture())
}

// both runs pass 1 and pass 2 and returns their reports; errors fail.
func (e *env) both(t *testing.T, path string) (pre, final *importer.Report) {
	t.Helper()
	pre, err := e.pre(t, path)
	if err != nil {
		t.Fatalf("pre-import %s: %v\n%v", path, err, pre.Items)
	}
	final, err = e.final(t, path)
	if err != nil {
		t.Fatalf("final import %s: %v\n%v", path, err, final.Items)
	}
	return pre, final
}

// ours returns the image's tags on our side, tag -> digest.
func (e *env) ours(t *testing.T, repo, image string) map[string]string {
	t.Helper()
	ctx := context.Background()
	tg, err := container.New(e.st).ResolveTarget(ctx, "legacy", repo, image)
	if store.HasCode(err, container.CodeNameUnknown) {
		return map[string]string{}
	}
	if err != nil {
		t.Fatal(err)
	}
	names, err := container.New(e.st).Tags(ctx, tg, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range names {
		m, err := container.New(e.st).ManifestByTag(ctx, tg, n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = store.FormatDigest(m.Digest[:])
	}
	return out
}

// hasManifest reports whether the image holds an active manifest.
func (e *env) hasManifest(t *testing.T, repo, image, digest string) bool {
	t.Helper()
	ctx := context.Background()
	tg, err := container.New(e.st).ResolveTarget(ctx, "legacy", repo, image)
	if err != nil {
		t.Fatal(err)
	}
	d, err := store.ParseSHA256(digest)
	if err != nil {
		t.Fatal(err)
	}
	_, err = container.New(e.st).ManifestByDigest(ctx, tg, d)
	if store.HasCode(err, container.CodeManifestUnknown) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// Paths inside the copied tree.
func (e *env) repoPath(repo string, parts ...string) string {
	return filepath.Join(append([]string{e.dir, "docker/registry/v2/repositories", repo}, parts...)...)
}

func (e *env) blobPath(digest string) string {
	h := strings.TrimPrefix(digest, "sha256:")
	return filepath.Join(e.dir, "docker/registry/v2/blobs/sha256", h[:2], h, "data")
}

func (e *env) revisionDir(repo, digest string) string {
	return e.repoPath(repo, "_manifests/revisions/sha256", strings.TrimPrefix(digest, "sha256:"))
}

func (e *env) tagLink(repo, tag string) string {
	return e.repoPath(repo, "_manifests/tags", tag, "current/link")
}

func remove(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("mutation target missing: %v", err)
	}
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// plant writes a manifest revision and a tag on it straight into the tree,
// as a registry that accepted it would have stored it, and returns its
// digest.
func (e *env) plant(t *testing.T, repo, tag string, payload []byte) string {
	t.Helper()
	sum := sha256.Sum256(payload)
	d := "sha256:" + hex.EncodeToString(sum[:])
	write(t, e.blobPath(d), payload)
	write(t, filepath.Join(e.revisionDir(repo, d), "link"), []byte(d))
	write(t, e.tagLink(repo, tag), []byte(d))
	write(t, filepath.Join(e.repoPath(repo, "_manifests/tags", tag, "index/sha256", sum2hex(sum)), "link"), []byte(d))
	return d
}

func sum2hex(s [32]byte) string { return hex.EncodeToString(s[:]) }

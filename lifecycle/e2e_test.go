package lifecycle

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	"github.com/artifact-registry/artifact-registry/internal/testserver"
	"github.com/artifact-registry/artifact-registry/internal/testtools"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// The end-to-end tests push with the real clients (crane, the npm CLI,
// mvn) to a full test server, set a policy and preview and run it through
// GraphQL, and check with the clients that exactly the kept artifacts are
// left. The server's clock is a fake one: pushes are "old" once it is
// moved past the policy's one-day minimum age, so the tests never sleep.

// gql posts a GraphQL operation as the super-user and decodes data.
func gql(t *testing.T, e *testserver.Env, query string, vars map[string]any, into any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	r := e.Do(http.MethodPost, "/graphql", testserver.Bearer(testserver.AdminToken), body, "Content-Type", "application/json")
	var out struct {
		Data   json.RawMessage
		Errors []struct{ Message string }
	}
	if err := json.Unmarshal([]byte(r.Body), &out); err != nil || len(out.Errors) > 0 {
		t.Fatalf("graphql %d: %s", r.Status, r.Body)
	}
	if into != nil {
		if err := json.Unmarshal(out.Data, into); err != nil {
			t.Fatal(err)
		}
	}
}

type preview struct {
	ArtifactCount int
	Items         struct {
		Edges []struct {
			Node struct {
				Kind string
				Name string
				Tags []string
			}
		}
	}
}

// policyRoundTrip sets a repository policy, previews it and runs it; it
// returns the preview and the run's count.
func policyRoundTrip(t *testing.T, e *testserver.Env, repo, rules string) (preview, int) {
	t.Helper()
	gql(t, e, `mutation($r: String!) { setLifecyclePolicy(input: {namespace: "acme", repository: $r, enabled: true,
		minAgeDays: 1, rules: [`+rules+`]}) { policy { id } } }`, map[string]any{"r": repo}, nil)
	var pv struct{ PreviewLifecyclePolicy preview }
	gql(t, e, `query($r: String!) { previewLifecyclePolicy(namespace: "acme", repository: $r) {
		artifactCount items(first: 100) { edges { node { kind name tags } } } } }`, map[string]any{"r": repo}, &pv)
	var run struct{ RunLifecyclePolicy struct{ DeletedCount int } }
	gql(t, e, `mutation($r: String!) { runLifecyclePolicy(input: {namespace: "acme", repository: $r}) { deletedCount } }`,
		map[string]any{"r": repo}, &run)
	return pv.PreviewLifecyclePolicy, run.RunLifecyclePolicy.DeletedCount
}

// trashDeleters returns TrashEdge.deletedBy of the namespace's trash.
func trashDeleters(t *testing.T, e *testserver.Env, kind string) []string {
	t.Helper()
	var out struct {
		Namespace struct {
			Trash struct{ Edges []struct{ DeletedBy *string } }
		}
	}
	gql(t, e, `query($k: TrashKind) { namespace(slug: "acme") { trash(first: 100, kind: $k) { edges { deletedBy } } } }`,
		map[string]any{"k": kind}, &out)
	var by []string
	for _, e := range out.Namespace.Trash.Edges {
		s := "<nil>"
		if e.DeletedBy != nil {
			s = *e.DeletedBy
		}
		by = append(by, s)
	}
	return by
}

func allPolicy(t *testing.T, by []string, n int) {
	t.Helper()
	if len(by) != n {
		t.Fatalf("%d trash items, want %d: %v", len(by), n, by)
	}
	for _, b := range by {
		if !strings.HasPrefix(b, "policy:") {
			t.Fatalf("trash item deleted by %q, want the policy", b)
		}
	}
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func layerTar(t *testing.T, dir, name, content string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write([]byte(content))
	_ = tw.Close()
	p := filepath.Join(dir, name+".tar")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCraneKeepLast3: crane pushes eight tags to one image; keep-last-3
// previews the five oldest, the run moves them to the trash (deleted by
// the policy) and crane ls shows the three newest.
func TestCraneKeepLast3(t *testing.T) {
	t.Parallel()
	crane := ocitools.Crane(t)
	e := testserver.New(t, testserver.Options{})
	e.Repo("img", enum.FormatOCI, enum.VisibilityPrivate)
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "DOCKER_CONFIG="+filepath.Join(home, ".docker"), "NO_COLOR=1")
	u, _ := url.Parse(e.URL)
	run(t, home, env, crane, "auth", "login", u.Host, "-u", "ci", "-p", testserver.AdminToken, "--insecure")
	ref := u.Host + "/acme/img/app"
	for i := 1; i <= 8; i++ {
		run(t, home, env, crane, "append", "--insecure", "-f", layerTar(t, home, fmt.Sprintf("f%d", i), fmt.Sprintf("build %d\n", i)),
			"-t", fmt.Sprintf("%s:v%d", ref, i))
	}
	e.Clock.Advance(48 * time.Hour)
	pv, deleted := policyRoundTrip(t, e, "img", `{type: KEEP_LAST_N, count: 3}`)
	var previewed []string
	for _, it := range pv.Items.Edges {
		previewed = append(previewed, it.Node.Tags...)
	}
	if pv.ArtifactCount != 5 || !slices.Equal(previewed, []string{"v5", "v4", "v3", "v2", "v1"}) {
		t.Fatalf("preview: %d items, tags %v", pv.ArtifactCount, previewed)
	}
	if deleted != 5 {
		t.Fatalf("run deleted %d, want 5", deleted)
	}
	tags := strings.Fields(run(t, home, env, crane, "ls", "--insecure", ref))
	slices.Sort(tags)
	if !slices.Equal(tags, []string{"v6", "v7", "v8"}) {
		t.Fatalf("crane ls after the run: %v", tags)
	}
	allPolicy(t, trashDeleters(t, e, "CONTAINER_MANIFEST"), 5)

	// Emptying the trash frees the five images' manifests, configs and
	// layers; the three kept ones still pull.
	kept := digests(t, e, `SELECT blob_sha256 FROM container_manifests WHERE namespace_id = $1 AND soft_deleted_at IS NULL
		UNION SELECT r.digest FROM container_manifest_blob_references r JOIN container_manifests m
		  ON m.namespace_id = r.namespace_id AND m.id = r.container_manifest_id WHERE r.namespace_id = $1 AND m.soft_deleted_at IS NULL`)
	gone := digests(t, e, `SELECT blob_sha256 FROM container_manifests WHERE namespace_id = $1 AND soft_deleted_at IS NOT NULL
		UNION SELECT r.digest FROM container_manifest_blob_references r JOIN container_manifests m
		  ON m.namespace_id = r.namespace_id AND m.id = r.container_manifest_id WHERE r.namespace_id = $1 AND m.soft_deleted_at IS NOT NULL`)
	if len(gone) != 15 {
		t.Fatalf("%d blobs of the five deleted images, want 15 (manifest, config, layer each)", len(gone))
	}
	emptyTrashFrees(t, e, gone, kept)
	for _, tag := range []string{"v6", "v7", "v8"} {
		run(t, home, env, crane, "pull", "--insecure", ref+":"+tag, filepath.Join(home, tag+".tar"))
	}
}

// TestNpmKeepLast2: the npm CLI publishes five versions; keep-last-2
// previews and deletes the three oldest; npm view lists the two kept, with
// latest still on the newest.
func TestNpmKeepLast2(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("the npm CLI is required for this test: %v", err)
	}
	e := testserver.New(t, testserver.Options{})
	e.Repo("js", enum.FormatNpm, enum.VisibilityPrivate)
	home := t.TempDir()
	registry := e.URL + "/npm/acme/js/"
	u, _ := url.Parse(registry)
	rc := strings.Join([]string{"registry=" + registry, "cache=" + filepath.Join(home, "cache"), "audit=false", "fund=false",
		"update-notifier=false", "progress=false", "loglevel=warn", "//" + u.Host + u.Path + ":_authToken=" + testserver.AdminToken}, "\n")
	if err := os.WriteFile(filepath.Join(home, ".npmrc"), []byte(rc+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(home, "globalnpmrc"), nil, 0o600)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(strings.ToLower(k), "npm_config_") || k == "HOME" || k == "NODE_OPTIONS" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "NPM_CONFIG_USERCONFIG="+filepath.Join(home, ".npmrc"),
		"NPM_CONFIG_GLOBALCONFIG="+filepath.Join(home, "globalnpmrc"), "NO_UPDATE_NOTIFIER=1")
	versions := []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0", "2.1.0"}
	for _, v := range versions {
		dir := filepath.Join(home, "pkg-"+v)
		_ = os.MkdirAll(dir, 0o755)
		pj, _ := json.Marshal(map[string]any{"name": "keeper", "version": v, "license": "MIT"})
		_ = os.WriteFile(filepath.Join(dir, "package.json"), pj, 0o644)
		_ = os.WriteFile(filepath.Join(dir, "index.js"), []byte("module.exports = '"+v+"';\n"), 0o644)
		run(t, dir, env, "npm", "publish")
	}
	e.Clock.Advance(48 * time.Hour)
	pv, deleted := policyRoundTrip(t, e, "js", `{type: KEEP_LAST_N, count: 2}`)
	var names []string
	for _, it := range pv.Items.Edges {
		names = append(names, it.Node.Name)
	}
	if pv.ArtifactCount != 3 || !slices.Equal(names, []string{"1.2.0", "1.1.0", "1.0.0"}) {
		t.Fatalf("preview: %d items %v", pv.ArtifactCount, names)
	}
	if deleted != 3 {
		t.Fatalf("run deleted %d, want 3", deleted)
	}
	var view struct {
		Versions []string          `json:"versions"`
		DistTags map[string]string `json:"dist-tags"`
	}
	out := run(t, home, env, "npm", "view", "--json", "keeper", "versions", "dist-tags")
	if err := json.Unmarshal([]byte(out), &view); err != nil {
		t.Fatalf("npm view: %v\n%s", err, out)
	}
	if !slices.Equal(view.Versions, []string{"2.0.0", "2.1.0"}) || view.DistTags["latest"] != "2.1.0" {
		t.Fatalf("npm view after the run: %+v", view)
	}
	allPolicy(t, trashDeleters(t, e, "NPM_VERSION"), 3)
	// A user's unpublish is recorded as the user's.
	run(t, home, env, "npm", "unpublish", "keeper@2.0.0")
	by := trashDeleters(t, e, "NPM_VERSION")
	if len(by) != 4 || by[0] != "admin:admin" {
		t.Fatalf("trash after npm unpublish: %v", by)
	}

	// Emptying the trash frees the four tarballs; 2.1.0 still installs.
	gone := digests(t, e, `SELECT f.blob_sha256 FROM npm_files f JOIN npm_versions v ON v.namespace_id = f.namespace_id
		AND v.id = f.npm_version_id WHERE f.namespace_id = $1 AND v.soft_deleted_at IS NOT NULL`)
	kept := digests(t, e, `SELECT f.blob_sha256 FROM npm_files f JOIN npm_versions v ON v.namespace_id = f.namespace_id
		AND v.id = f.npm_version_id WHERE f.namespace_id = $1 AND v.soft_deleted_at IS NULL`)
	if len(gone) != 4 || len(kept) != 1 {
		t.Fatalf("%d tarballs deleted, %d kept; want 4 and 1", len(gone), len(kept))
	}
	emptyTrashFrees(t, e, gone, kept)
	proj := filepath.Join(home, "consumer")
	_ = os.MkdirAll(proj, 0o755)
	_ = os.WriteFile(filepath.Join(proj, "package.json"), []byte(`{"name": "consumer", "version": "1.0.0"}`), 0o644)
	run(t, proj, env, "npm", "install", "keeper@2.1.0")
}

// TestMavenKeepSnapshotBuilds: mvn deploys three builds of one SNAPSHOT;
// KEEP_SNAPSHOT_BUILDS 1 previews and removes the two older builds, the
// version's maven-metadata.xml then lists only the newest, whose jar still
// downloads while the older builds' answer 404.
func TestMavenKeepSnapshotBuilds(t *testing.T) {
	t.Parallel()
	testtools.RequireMaven(t)
	e := testserver.New(t, testserver.Options{})
	e.Repo("releases", enum.FormatMaven, enum.VisibilityPrivate)
	e.Repo("snapshots", enum.FormatMaven, enum.VisibilityPrivate)
	work := t.TempDir()
	testdata := filepath.Join("..", "protocol", "maven", "testdata")
	b, err := os.ReadFile(filepath.Join(testdata, "settings.xml"))
	if err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(work, "settings.xml")
	_ = os.WriteFile(settings, bytes.ReplaceAll(b, []byte("@TOKEN@"), []byte(testserver.AdminToken)), 0o644)
	lib := filepath.Join(work, "lib")
	if err := os.CopyFS(lib, os.DirFS(filepath.Join(testdata, "lib"))); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "MAVEN_OPTS=-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto")
	for i := range 3 {
		// A resource that differs per build gives each build a jar of its
		// own; the POM is the same bytes in every build.
		res := filepath.Join(lib, "src", "main", "resources")
		_ = os.MkdirAll(res, 0o755)
		_ = os.WriteFile(filepath.Join(res, "build.txt"), []byte(fmt.Sprintf("build %d\n", i+1)), 0o644)
		run(t, lib, env, "mvn", "-s", settings, "-B", "--no-transfer-progress", "-Dmaven.repo.local="+filepath.Join(work, "m2"),
			"-Dreleases.url="+e.URL+"/maven/acme/releases", "-Dsnapshots.url="+e.URL+"/maven/acme/snapshots",
			"-Dlib.version=1.1.0-SNAPSHOT", "deploy")
		// Timestamped builds are named by the second.
		time.Sleep(1100 * time.Millisecond)
	}
	e.Clock.Advance(48 * time.Hour)
	pv, deleted := policyRoundTrip(t, e, "snapshots", `{type: KEEP_SNAPSHOT_BUILDS, count: 1}`)
	if pv.ArtifactCount != 2 || len(pv.Items.Edges) != 2 || pv.Items.Edges[0].Node.Kind != "MAVEN_SNAPSHOT_BUILD" ||
		!strings.HasSuffix(pv.Items.Edges[0].Node.Name, "-2") || !strings.HasSuffix(pv.Items.Edges[1].Node.Name, "-1") {
		t.Fatalf("preview: %+v", pv)
	}
	if deleted != 2 {
		t.Fatalf("run deleted %d, want 2", deleted)
	}
	base := "/maven/acme/snapshots/com/example/anchor/anchor-lib/1.1.0-SNAPSHOT/"
	md := e.Do(http.MethodGet, base+"maven-metadata.xml", testserver.Basic(testserver.AdminToken), nil)
	if md.Status != http.StatusOK || !strings.Contains(md.Body, "<buildNumber>3</buildNumber>") || strings.Count(md.Body, "<extension>jar</extension>") != 1 {
		t.Fatalf("metadata after the run: %d\n%s", md.Status, md.Body)
	}
	for i, name := range pv.Items.Edges {
		jar := base + "anchor-lib-" + name.Node.Name + ".jar"
		if r := e.Do(http.MethodGet, jar, testserver.Basic(testserver.AdminToken), nil); r.Status != http.StatusNotFound {
			t.Errorf("old build %d: GET %s = %d", i, jar, r.Status)
		}
	}
	if r := e.Do(http.MethodGet, base+"anchor-lib-1.1.0-SNAPSHOT.jar", testserver.Basic(testserver.AdminToken), nil); r.Status != http.StatusOK {
		t.Errorf("newest build: %d", r.Status)
	}

	// Emptying the trash frees the old builds' own files (their jars);
	// the POM, the same bytes in every build, stays with the newest.
	live := `SELECT blob_sha256 FROM maven_files WHERE namespace_id = $1 AND soft_deleted_at IS NULL`
	kept := digests(t, e, live)
	gone := digests(t, e, `SELECT blob_sha256 FROM maven_files WHERE namespace_id = $1 AND soft_deleted_at IS NOT NULL
		EXCEPT `+live)
	if len(gone) < 2 {
		t.Fatalf("%d blobs of their own in the two old builds, want at least their 2 jars", len(gone))
	}
	emptyTrashFrees(t, e, gone, kept)
	jar := e.Do(http.MethodGet, base+"anchor-lib-1.1.0-SNAPSHOT.jar", testserver.Basic(testserver.AdminToken), nil)
	if jar.Status != http.StatusOK || len(jar.Body) == 0 {
		t.Errorf("newest build after GC: %d", jar.Status)
	}
}

// TestMavenVersions: four released versions deployed over HTTP; keep the
// last two, and 1.0.0 by regex: only 1.1.0 goes, and the package's
// maven-metadata.xml stops listing it.
func TestMavenVersions(t *testing.T) {
	t.Parallel()
	e := testserver.New(t, testserver.Options{})
	e.Repo("releases", enum.FormatMaven, enum.VisibilityPrivate)
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0"} {
		e.MavenDeploy("releases", v)
	}
	e.Clock.Advance(48 * time.Hour)
	pv, deleted := policyRoundTrip(t, e, "releases", `{type: KEEP_LAST_N, count: 2}, {type: KEEP_REGEX, pattern: "1\\.0\\.0"}`)
	if pv.ArtifactCount != 1 || pv.Items.Edges[0].Node.Name != "1.1.0" || pv.Items.Edges[0].Node.Kind != "MAVEN_VERSION" || deleted != 1 {
		t.Fatalf("preview %+v, deleted %d", pv, deleted)
	}
	md := e.Do(http.MethodGet, "/maven/acme/releases/com/example/lib/maven-metadata.xml", testserver.Basic(testserver.AdminToken), nil)
	if md.Status != http.StatusOK || strings.Contains(md.Body, "<version>1.1.0</version>") || !strings.Contains(md.Body, "<version>1.0.0</version>") {
		t.Fatalf("metadata after the run: %d\n%s", md.Status, md.Body)
	}
	allPolicy(t, trashDeleters(t, e, "MAVEN_VERSION"), 1)
}

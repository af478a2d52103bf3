package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/gc"
	"github.com/artifact-registry/artifact-registry/graph"
	"github.com/artifact-registry/artifact-registry/internal/httpserver"
	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	"github.com/artifact-registry/artifact-registry/internal/routes"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/internal/testsupport/fakeclock"
	"github.com/artifact-registry/artifact-registry/protocol/maven"
	"github.com/artifact-registry/artifact-registry/protocol/npm"
	"github.com/artifact-registry/artifact-registry/protocol/oci"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// TestCraneEmptyTrashFreesStorage: crane pushes three images sharing a
// base layer, two manifests are deleted with crane, emptyTrash purges
// them (gcQueue.tracked counts their now unused blobs: the two manifest
// payloads, their configs and their own layers; the shared base layer
// stays linked for the kept image), and garbage collection with the test
// clock past the review delay and the grace window removes those objects
// from the bucket while the shared layer and the kept image stay
// pullable.
func TestCraneEmptyTrashFreesStorage(t *testing.T) {
	clock := fakeclock.New(time.Now())
	st := testsupport.Store(t, testsupport.StoreOptions{Store: store.Options{Clock: clock, ReviewDelay: time.Hour}})
	log := testsupport.Logger("E2E_SERVER_LOG")
	hs := httpserver.New(httpserver.Options{Logger: log})
	authn := auth.New(st, auth.Options{AdminToken: adminToken, Logger: log})
	routes.Mount(hs.Router(), st, routes.Options{
		OCI: oci.Options{Auth: authn, Logger: log}, Npm: npm.Options{Auth: authn, Logger: log},
		Maven: maven.Options{Auth: authn, Logger: log}, Graph: graph.Options{Auth: authn, Logger: log},
	})
	srv := httptest.NewServer(hs.Handler())
	t.Cleanup(srv.Close)
	s := &server{URL: srv.URL, Host: strings.TrimPrefix(srv.URL, "http://"), Store: st}
	s.graphql(t, `mutation { createNamespace(input: {slug: "acme"}) { namespace { id } } }`, nil)
	s.graphql(t, `mutation { createRepository(input: {namespace: "acme", name: "images", format: OCI}) { repository { id } } }`, nil)
	var tok struct{ CreateAccessToken struct{ Secret string } }
	mustJSON(t, s.graphql(t, `mutation { createAccessToken(input: {namespace: "acme", name: "ci", scopes: [READ, WRITE, DELETE]}) { secret } }`, nil), &tok)

	crane := craneCLI{t: t, bin: ocitools.Crane(t), home: t.TempDir()}
	crane.run("auth", "login", s.Host, "-u", "ci", "-p", tok.CreateAccessToken.Secret, "--insecure")
	work := t.TempDir()
	base := tarFile(t, work, "base.txt", strings.Repeat("shared base layer\n", 100))
	img := s.Host + "/acme/images/app"
	digests := map[string]string{}
	var unique []string // the configs and own layers of v1 and v2
	for _, tag := range []string{"v1", "v2", "v3"} {
		crane.run("append", "--insecure", "-f", base, "-f", tarFile(t, work, tag+".txt", "only in "+tag+"\n"), "-t", img+":"+tag)
		digests[tag] = crane.run("digest", "--insecure", img+":"+tag)
		var m struct {
			Config struct{ Digest string }
			Layers []struct{ Digest string }
		}
		if err := json.Unmarshal([]byte(crane.run("manifest", "--insecure", img+":"+tag)), &m); err != nil || len(m.Layers) != 2 {
			t.Fatalf("%s manifest: %v %+v", tag, err, m)
		}
		if tag != "v3" {
			unique = append(unique, m.Config.Digest, m.Layers[1].Digest)
		}
	}
	for _, tag := range []string{"v1", "v2"} {
		crane.run("delete", "--insecure", img+"@"+digests[tag])
	}
	if tags := strings.Fields(crane.run("ls", "--insecure", img)); strings.Join(tags, ",") != "v3" {
		t.Fatalf("tags after delete: %v", tags)
	}

	// Past the window in which a push may still reference a blob link it
	// uploaded (the purge keeps younger links for the push in progress).
	clock.Advance(24*time.Hour + time.Minute)
	var emptied struct {
		EmptyTrash struct{ PurgedCount, GcCandidates int }
	}
	mustJSON(t, s.graphql(t, `mutation { emptyTrash(input: {namespace: "acme"}) { purgedCount gcCandidates } }`, nil), &emptied)
	if emptied.EmptyTrash.PurgedCount != 2 || emptied.EmptyTrash.GcCandidates != 6 {
		t.Fatalf("emptyTrash = %+v", emptied)
	}
	var q struct {
		Namespace struct {
			ID      string
			GcQueue struct{ Tracked int }
		}
	}
	mustJSON(t, s.graphql(t, `{ namespace(slug: "acme") { id gcQueue { tracked } } }`, nil), &q)
	if q.Namespace.GcQueue.Tracked != 6 {
		t.Fatalf("gcQueue.tracked = %d, want the 2 purged manifests' payloads, configs and own layers", q.Namespace.GcQueue.Tracked)
	}

	// Garbage collection, past the review delay and the grace window.
	collector, err := gc.New(st, gc.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour + store.GCGracePeriod + time.Minute)
	ns, err := st.NamespaceBySlug(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range append([]string{digests["v1"], digests["v2"]}, unique...) {
		key := store.GCCandidateKey{NamespaceID: ns.ID, SHA256: sha(t, d)}
		res, err := collector.Cleanup(context.Background(), key)
		if err != nil || res.Outcome != store.GCReclaimed {
			t.Fatalf("cleanup of %s: %+v %v", d, res, err)
		}
		if objectExists(t, st, ns.ID, key.SHA256) {
			t.Fatalf("the object of %s is still in the bucket", d)
		}
	}
	var m3 struct{ Layers []struct{ Digest string } }
	if err := json.Unmarshal([]byte(crane.run("manifest", "--insecure", img+":v3")), &m3); err != nil || len(m3.Layers) != 2 {
		t.Fatalf("v3 manifest: %v %+v", err, m3)
	}
	if !objectExists(t, st, ns.ID, sha(t, m3.Layers[0].Digest)) {
		t.Fatal("the shared base layer left the bucket")
	}
	if !objectExists(t, st, ns.ID, sha(t, digests["v3"])) {
		t.Fatal("the kept manifest left the bucket")
	}
	crane.run("pull", "--insecure", img+":v3", filepath.Join(work, "v3.tar"))
}

func mustJSON(t *testing.T, raw json.RawMessage, into any) {
	t.Helper()
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatal(err)
	}
}

func sha(t *testing.T, digest string) [32]byte {
	t.Helper()
	b, err := hex.DecodeString(strings.TrimPrefix(digest, "sha256:"))
	if err != nil || len(b) != 32 {
		t.Fatalf("digest %q: %v", digest, err)
	}
	return [32]byte(b)
}

func objectExists(t *testing.T, st *store.Store, ns uuid.UUID, d [32]byte) bool {
	t.Helper()
	ok, err := st.Objects().Exists(context.Background(), objstore.BlobKey(ns, d))
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// tarFile writes a one-file layer tarball (crane append -f).
func tarFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name+".tar")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// craneCLI runs crane with a private HOME / DOCKER_CONFIG.
type craneCLI struct {
	t         *testing.T
	bin, home string
}

func (c craneCLI) run(args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+c.home, "DOCKER_CONFIG="+filepath.Join(c.home, ".docker"))
	cmd.Dir = c.home
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("crane %s: %v\n%s\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

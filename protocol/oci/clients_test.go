package oci

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// cli runs a client binary with a private HOME / DOCKER_CONFIG.
type cli struct {
	t    *testing.T
	bin  string
	home string
	dir  string // working directory (default: home)
}

func newCLI(t *testing.T, bin string) *cli {
	home := t.TempDir()
	return &cli{t: t, bin: bin, home: home}
}

func (c *cli) env() []string {
	return append(os.Environ(), "HOME="+c.home, "DOCKER_CONFIG="+filepath.Join(c.home, ".docker"),
		"XDG_CONFIG_HOME="+filepath.Join(c.home, ".config"), "NO_COLOR=1")
}

// run runs the client and fails the test unless it exits 0.
func (c *cli) run(args ...string) string {
	c.t.Helper()
	out, err := c.try(args...)
	if err != nil {
		c.t.Fatalf("%s %s: %v\n%s", filepath.Base(c.bin), strings.Join(args, " "), err, out)
	}
	return out
}

// fail runs the client and fails the test unless it exits non-zero with
// output containing want.
func (c *cli) fail(want string, args ...string) string {
	c.t.Helper()
	out, err := c.try(args...)
	if err == nil {
		c.t.Fatalf("%s %s: succeeded, want failure with %q\n%s", filepath.Base(c.bin), strings.Join(args, " "), want, out)
	}
	if !strings.Contains(out, want) {
		c.t.Fatalf("%s %s: failed without %q:\n%s", filepath.Base(c.bin), strings.Join(args, " "), want, out)
	}
	return out
}

func (c *cli) try(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = c.env()
	cmd.Dir = c.home
	if c.dir != "" {
		cmd.Dir = c.dir
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		// Failures are judged on everything the client said.
		return strings.TrimSpace(stdout.String() + "\n" + stderr.String()), err
	}
	return strings.TrimSpace(stdout.String()), nil
}

// layerTar writes a tar layer with one file.
func layerTar(t *testing.T, dir, name, content string) string {
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

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCrane drives go-containerregistry's crane, logged in with access
// tokens (READ refused a push, then WRITE+DELETE), through push
// (Docker schema 2 and OCI images), pull, export, tag, list, copy between
// repositories (cross-repository mount), multi-platform index, catalog,
// blob fetch and delete, and the anonymous / private access rules.
func TestCrane(t *testing.T) {
	crane := newCLI(t, ocitools.Crane(t))
	s := newTestServer(t)
	s.repo(t, "clients", "private", enum.FormatDocker, enum.VisibilityPrivate)
	s.repo(t, "clients", "public", enum.FormatOCI, enum.VisibilityPublic)
	priv := s.Host + "/clients/private/app"
	pub := s.Host + "/clients/public/app"
	work := t.TempDir()

	// Anonymous: private repositories answer 401, nothing is pushed.
	crane.fail("UNAUTHORIZED", "ls", "--insecure", priv)
	crane.fail("401 Unauthorized", "append", "--insecure", "-f", layerTar(t, work, "anon", "x"), "-t", priv+":anon")
	// Wrong password (crane stores it without checking; the registry refuses it).
	crane.run("auth", "login", s.Host, "-u", "ci", "-p", "wrong", "--insecure")
	crane.fail("UNAUTHORIZED", "ls", "--insecure", priv)

	// Access tokens through the Bearer token flow: a READ token pulls but
	// cannot push (403 DENIED); the rest runs with a WRITE+DELETE token.
	reader := s.token(t, "clients", "reader", enum.TokenScopeRead)
	crane.run("auth", "login", s.Host, "-u", "ci", "-p", reader, "--insecure")
	crane.fail("DENIED", "append", "--insecure", "-f", layerTar(t, work, "ro", "x"), "-t", priv+":ro")
	ci := s.token(t, "clients", "ci", enum.TokenScopeWrite, enum.TokenScopeDelete)
	crane.run("auth", "login", s.Host, "-u", "ci", "-p", ci, "--insecure")

	// Docker schema 2 image (crane's default) and an OCI image.
	crane.run("append", "--insecure", "-f", layerTar(t, work, "hello.txt", "hello from crane\n"), "-t", priv+":v1")
	crane.run("append", "--insecure", "--oci-empty-base", "--platform", "linux/arm64",
		"-f", layerTar(t, work, "oci.txt", "an oci image\n"), "-t", priv+":oci")
	m := crane.run("manifest", "--insecure", priv+":v1")
	if !strings.Contains(m, mtDockerManifest) {
		t.Fatalf("v1 manifest is not Docker schema 2:\n%s", m)
	}
	if m := crane.run("manifest", "--insecure", priv+":oci"); !strings.Contains(m, mtOCIManifest) {
		t.Fatalf("oci manifest is not an OCI manifest:\n%s", m)
	}
	dig := crane.run("digest", "--insecure", priv+":v1")

	// Pull and export.
	crane.run("pull", "--insecure", priv+":v1", filepath.Join(work, "pulled.tar"))
	if fi, err := os.Stat(filepath.Join(work, "pulled.tar")); err != nil || fi.Size() == 0 {
		t.Fatalf("crane pull wrote nothing: %v", err)
	}
	if out := crane.run("export", "--insecure", priv+":v1", "-"); !strings.Contains(out, "hello from crane") {
		t.Fatalf("exported filesystem lacks the layer file")
	}

	// Tag and list.
	crane.run("tag", "--insecure", priv+":v1", "v2")
	if got := crane.run("digest", "--insecure", priv+":v2"); got != dig {
		t.Fatalf("v2 digest %s, want %s", got, dig)
	}
	if tags := strings.Fields(crane.run("ls", "--insecure", priv)); strings.Join(tags, ",") != "oci,v1,v2" {
		t.Fatalf("tags = %v", tags)
	}

	// Copy into another repository of the namespace (blobs are mounted).
	crane.run("copy", "--insecure", priv+":v1", pub+":copied")
	if got := crane.run("digest", "--insecure", pub+":copied"); got != dig {
		t.Fatalf("copied digest %s, want %s", got, dig)
	}

	// Multi-platform index of the two images.
	crane.run("index", "append", "--insecure", "-m", priv+":v1", "-m", priv+":oci", "-t", priv+":multi")
	idx := crane.run("manifest", "--insecure", priv+":multi")
	var index struct {
		MediaType string `json:"mediaType"`
		Manifests []struct {
			Digest string `json:"digest"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal([]byte(idx), &index); err != nil || len(index.Manifests) != 2 {
		t.Fatalf("index: %v\n%s", err, idx)
	}
	// A child of an index cannot be deleted before the index.
	crane.fail("DENIED", "delete", "--insecure", priv+"@"+dig)

	// Catalog: a token of the namespace sees both repositories.
	cat := crane.run("catalog", "--insecure", s.Host)
	for _, want := range []string{"clients/private/app", "clients/public/app"} {
		if !strings.Contains(cat, want) {
			t.Fatalf("catalog lacks %s:\n%s", want, cat)
		}
	}

	// Blob fetch: the layer of v1.
	var man struct {
		Layers []struct {
			Digest string `json:"digest"`
		} `json:"layers"`
	}
	if err := json.Unmarshal([]byte(m), &man); err != nil || len(man.Layers) != 1 {
		t.Fatalf("manifest: %v", err)
	}
	if blob := crane.run("blob", "--insecure", priv+"@"+man.Layers[0].Digest); len(blob) == 0 {
		t.Fatal("empty layer blob")
	}

	// Delete: the index, then v1 (its tags go with it).
	idxDig := crane.run("digest", "--insecure", priv+":multi")
	crane.run("delete", "--insecure", priv+"@"+idxDig)
	crane.fail("MANIFEST_UNKNOWN", "manifest", "--insecure", priv+":multi")
	crane.run("delete", "--insecure", priv+"@"+dig)
	crane.fail("MANIFEST_UNKNOWN", "manifest", "--insecure", priv+":v2")
	if tags := strings.Fields(crane.run("ls", "--insecure", priv)); strings.Join(tags, ",") != "oci" {
		t.Fatalf("tags after delete = %v", tags)
	}
	// The copy in the other repository is untouched.
	crane.run("manifest", "--insecure", pub+":copied")

	// Anonymous pull of the public repository works; private stays closed.
	anon := newCLI(t, crane.bin)
	anon.run("manifest", "--insecure", pub+":copied")
	anon.run("pull", "--insecure", pub+":copied", filepath.Join(work, "anon.tar"))
	anon.fail("UNAUTHORIZED", "manifest", "--insecure", priv+":oci")
	anon.fail("UNAUTHORIZED", "delete", "--insecure", pub+":copied")
}

// TestOras drives oras, with access tokens as the password (WRITE+DELETE;
// READ refused; revoked refused), through push of an artifact, anonymous pull from a
// public repository, referrers attach and discover (the referrers API,
// with an artifactType filter), tag, tag listing, copy with referrers
// between repositories, and deletes.
func TestOras(t *testing.T) {
	oras := newCLI(t, ocitools.Oras(t))
	s := newTestServer(t)
	s.repo(t, "clients", "private", enum.FormatOCI, enum.VisibilityPrivate)
	s.repo(t, "clients", "public", enum.FormatOCI, enum.VisibilityPublic)
	priv := s.Host + "/clients/private/art"
	pub := s.Host + "/clients/public/art"
	work := t.TempDir()
	oras.dir = work
	token := s.token(t, "clients", "ci", enum.TokenScopeWrite, enum.TokenScopeDelete)
	auth := []string{"--plain-http", "-u", "ci", "-p", token}
	with := func(args ...string) []string { return append(args, auth...) }
	api := "--distribution-spec=v1.1-referrers-api"

	// Push an artifact (files with their own media types).
	writeFile(t, work, "readme.md", "# hello from oras\n")
	writeFile(t, work, "data.json", `{"answer":42}`)
	oras.run(with("push", priv+":v1", "--artifact-type", "application/vnd.example.thing.v1",
		"readme.md:text/markdown", "data.json:application/json")...)
	oras.fail("authentication required", "pull", "--plain-http", priv+":v1", "-o", filepath.Join(work, "denied"))

	// Attach two referrers to v1 and discover them through the referrers API.
	writeFile(t, work, "sig.txt", "signature")
	writeFile(t, work, "sbom.json", `{"sbom":true}`)
	oras.run(with("attach", api, "--artifact-type", "application/vnd.example.signature", priv+":v1", "sig.txt")...)
	oras.run(with("attach", api, "--artifact-type", "application/vnd.example.sbom", "-a", "org.example.kind=sbom",
		priv+":v1", "sbom.json:application/json")...)
	disc := oras.run(with("discover", api, "--format", "json", priv+":v1")...)
	for _, want := range []string{"application/vnd.example.signature", "application/vnd.example.sbom", "org.example.kind"} {
		if !strings.Contains(disc, want) {
			t.Fatalf("discover lacks %s:\n%s", want, disc)
		}
	}
	filtered := oras.run(with("discover", api, "--format", "json", "--artifact-type", "application/vnd.example.sbom", priv+":v1")...)
	if !strings.Contains(filtered, "application/vnd.example.sbom") || strings.Contains(filtered, "application/vnd.example.signature") {
		t.Fatalf("filtered discover:\n%s", filtered)
	}

	// Tag and list tags (attach pushes no tags: the referrers API is used).
	oras.run(with("tag", priv+":v1", "v2", "stable")...)
	if tags := strings.Fields(oras.run(with("repo", "tags", priv)...)); strings.Join(tags, ",") != "stable,v1,v2" {
		t.Fatalf("tags = %v", tags)
	}

	// Copy with referrers into the public repository, then pull anonymously.
	oras.run("cp", "-r", "--from-plain-http", "--to-plain-http",
		"--from-username", "ci", "--from-password", token, "--to-username", "ci", "--to-password", token,
		priv+":v1", pub+":v1")
	anon := newCLI(t, oras.bin)
	out := filepath.Join(work, "pulled")
	anon.run("pull", "--plain-http", pub+":v1", "-o", out)
	if b, err := os.ReadFile(filepath.Join(out, "readme.md")); err != nil || string(b) != "# hello from oras\n" {
		t.Fatalf("pulled readme: %q %v", b, err)
	}
	if d := anon.run("discover", "--plain-http", api, "--format", "json", pub+":v1"); !strings.Contains(d, "application/vnd.example.signature") {
		t.Fatalf("referrers not copied:\n%s", d)
	}

	// Delete: a referrer, then the artifact itself (its tags go with it).
	var refs struct {
		Referrers []struct {
			Digest       string `json:"digest"`
			ArtifactType string `json:"artifactType"`
		} `json:"referrers"`
	}
	if err := json.Unmarshal([]byte(disc), &refs); err != nil || len(refs.Referrers) != 2 {
		t.Fatalf("discover json: %v\n%s", err, disc)
	}
	oras.run(with("manifest", "delete", "--force", priv+"@"+refs.Referrers[0].Digest)...)
	if d := oras.run(with("discover", api, "--format", "json", priv+":v1")...); strings.Contains(d, refs.Referrers[0].Digest) {
		t.Fatalf("deleted referrer still listed:\n%s", d)
	}
	oras.run(with("manifest", "delete", "--force", priv+":v1")...)
	oras.fail("not found", with("manifest", "fetch", priv+":stable")...)
	// The public copy is untouched.
	anon.run("manifest", "fetch", "--plain-http", pub+":v1")
	// A READ token cannot push or delete (403 DENIED), and a revoked token
	// is refused (401).
	reader := s.token(t, "clients", "reader", enum.TokenScopeRead)
	ro := []string{"--plain-http", "-u", "ci", "-p", reader}
	oras.fail("denied: the token lacks the WRITE scope", append([]string{"push", priv + ":ro", "readme.md:text/markdown"}, ro...)...)
	oras.fail("denied: the token lacks the DELETE scope", append([]string{"manifest", "delete", "--force", pub + ":v1"}, ro...)...)
	oras.run(append([]string{"manifest", "fetch", pub + ":v1"}, ro...)...)
	revokeAll(t, s, "clients")
	// (Public pulls never present it: clients send credentials only when
	// challenged.)
	oras.fail("the token has been revoked", append([]string{"manifest", "fetch", priv + ":v1"}, ro...)...)
}

// revokeAll revokes every token of a namespace through the Authenticator,
// so the revocation takes effect at once.
func revokeAll(t *testing.T, s *testServer, ns string) {
	t.Helper()
	ctx := context.Background()
	n, err := s.Store.NamespaceBySlug(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	toks, _, err := s.Authn.ListTokens(ctx, auth.AdminPrincipal(""), auth.NamespaceOf(n), nil, 100, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range toks {
		if _, err := s.Authn.RevokeToken(ctx, auth.AdminPrincipal(""), auth.NamespaceOf(n), tok.ID); err != nil {
			t.Fatal(err)
		}
	}
}

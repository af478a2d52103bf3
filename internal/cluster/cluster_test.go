package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
)

// TestCluster runs the real clients against three instances behind the
// round-robin proxy on one database and one S3 bucket: the OCI
// conformance suite, crane, oras, npm and mvn, an OCI upload whose
// requests are each sent to a chosen instance, and a check that the
// leader-only periodic jobs were inserted once, not once per instance, and
// a token revoked, the namespace suspended or a repository made private on
// one instance is enforced by the others within 1 s.
// Every request through the proxy goes to the next instance, so each
// client's session (token, upload, publish then install) crosses
// instances.
func TestCluster(t *testing.T) {
	start := time.Now()
	c := Start(t, Options{Instances: 3})
	t.Logf("cluster of 3 started in %s", time.Since(start).Round(time.Millisecond))
	leaders := watchLeaders(t, c)
	ctx := context.Background()
	must(t, c.CreateNamespace(ctx, "cl"))
	for _, r := range [][3]string{{"oci", "OCI", "PRIVATE"}, {"js", "NPM", "PRIVATE"},
		{"releases", "MAVEN", "PRIVATE"}, {"snapshots", "MAVEN", "PUBLIC"}} {
		must(t, c.CreateRepository(ctx, "cl", r[0], r[1], r[2]))
	}
	admin, err := c.CreateToken(ctx, "cl", "admin", "ADMIN")
	must(t, err)
	host := strings.TrimPrefix(c.URL, "http://")

	t.Run("conformance", func(t *testing.T) {
		bin := ocitools.Conformance(t)
		for _, v := range []string{"1.1", "dev"} {
			t.Run(v, func(t *testing.T) {
				name := "v" + strings.ReplaceAll(v, ".", "")
				ocitools.RunConformance(t, bin, ocitools.ConformanceRun{
					Registry: host, Repo1: "cl/oci/" + name + "-one", Repo2: "cl/oci/" + name + "-two",
					Username: "conformance", Password: admin, Version: v,
					Out: os.Getenv("OCI_CONFORMANCE_OUT"), Name: "cluster-" + v,
				})
			})
		}
	})
	t.Run("chunked-upload", func(t *testing.T) { testChunkedUpload(t, c, admin) })
	t.Run("crane", func(t *testing.T) { testCrane(t, c, host, admin) })
	t.Run("oras", func(t *testing.T) { testOras(t, c, host, admin) })
	t.Run("npm", func(t *testing.T) { testNpm(t, c, admin) })
	t.Run("mvn", func(t *testing.T) { testMvn(t, c, admin) })
	t.Run("invalidation", func(t *testing.T) { testInvalidation(t, c, admin) })
	t.Run("leader-only-jobs", func(t *testing.T) { leaders.check(t) })
	for i := range c.Instances() {
		t.Logf("instance %d served %d requests through the proxy", i, c.Requests(i))
		if c.Requests(i) == 0 {
			t.Errorf("instance %d served nothing through the proxy", i)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testChunkedUpload starts an upload on instance 0, sends a chunk to
// instance 1 and one to instance 2, completes it on instance 0, and reads
// the blob back from every instance, for a blob large enough that the
// chunks are S3 multipart parts and for a small one.
func testChunkedUpload(t *testing.T, c *Cluster, token string) {
	for _, size := range []int{6 << 20, 10 << 10} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			data := make([]byte, 2*size+size/3)
			for i := range data {
				data[i] = byte(i*7 + size)
			}
			sum := sha256.Sum256(data)
			digest := "sha256:" + hex.EncodeToString(sum[:])
			u := uploader{t: t, c: c, token: token}
			loc := u.do(0, http.MethodPost, "/v2/cl/oci/chunked/blobs/uploads/", nil, "", http.StatusAccepted)
			loc = u.do(1, http.MethodPatch, loc, data[:size], fmt.Sprintf("0-%d", size-1), http.StatusAccepted)
			loc = u.do(2, http.MethodPatch, loc, data[size:2*size], fmt.Sprintf("%d-%d", size, 2*size-1), http.StatusAccepted)
			sep := "?"
			if strings.Contains(loc, "?") {
				sep = "&"
			}
			u.do(0, http.MethodPut, loc+sep+"digest="+url.QueryEscape(digest), data[2*size:], "", http.StatusCreated)
			for i := range c.Instances() {
				got := u.get(i, "/v2/cl/oci/chunked/blobs/"+digest)
				if s := sha256.Sum256(got); !bytes.Equal(s[:], sum[:]) {
					t.Errorf("instance %d: blob of %d bytes has another digest (%d bytes read)", i, len(data), len(got))
				}
			}
		})
	}
}

// uploader sends OCI requests to chosen instances with Basic auth.
type uploader struct {
	t     *testing.T
	c     *Cluster
	token string
}

// do sends a request to instance i and returns the path and query of the
// Location it answers.
func (u uploader) do(i int, method, path string, body []byte, contentRange string, want int) string {
	u.t.Helper()
	req, err := http.NewRequest(method, u.c.Instance(i).URL+path, bytes.NewReader(body))
	must(u.t, err)
	req.SetBasicAuth("ci", u.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	if contentRange != "" {
		req.Header.Set("Content-Range", contentRange)
	}
	resp, err := http.DefaultClient.Do(req)
	must(u.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		u.t.Fatalf("%s %s on instance %d = %d, want %d: %s", method, path, i, resp.StatusCode, want, b)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	must(u.t, err)
	return loc.RequestURI()
}

func (u uploader) get(i int, path string) []byte {
	u.t.Helper()
	req, err := http.NewRequest(http.MethodGet, u.c.Instance(i).URL+path, nil)
	must(u.t, err)
	req.SetBasicAuth("ci", u.token)
	resp, err := http.DefaultClient.Do(req)
	must(u.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(u.t, err)
	if resp.StatusCode != http.StatusOK {
		u.t.Fatalf("GET %s on instance %d = %d: %s", path, i, resp.StatusCode, b)
	}
	return b
}

// testCrane pushes an image through the proxy, pulls it back and reads
// its digest from every instance directly.
func testCrane(t *testing.T, c *Cluster, host, token string) {
	crane := newCLI(t, ocitools.Crane(t))
	ref := host + "/cl/oci/crane-app"
	crane.run("auth", "login", host, "-u", "ci", "-p", token, "--insecure")
	content := strings.Repeat("hello from a cluster\n", 50000)
	crane.run("append", "--insecure", "-f", layerTar(t, t.TempDir(), "hello.txt", content), "-t", ref+":v1")
	crane.run("copy", "--insecure", ref+":v1", host+"/cl/oci/crane-copy:v1")
	digest := crane.run("digest", "--insecure", ref+":v1")
	for i := range c.Instances() {
		crane.run("auth", "login", c.Instance(i).Addr, "-u", "ci", "-p", token, "--insecure")
		if d := crane.run("digest", "--insecure", c.Instance(i).Addr+"/cl/oci/crane-copy:v1"); d != digest {
			t.Errorf("instance %d: digest of the copy %s, want %s", i, d, digest)
		}
	}
	out := filepath.Join(t.TempDir(), "fs.tar")
	crane.run("export", "--insecure", ref+":v1", out)
	if got := tarFile(t, out, "hello.txt"); got != content {
		t.Errorf("exported hello.txt has %d bytes, want %d", len(got), len(content))
	}
}

// testOras pushes an artifact of two files through the proxy and pulls
// it back.
func testOras(t *testing.T, c *Cluster, host, token string) {
	oras := newCLI(t, ocitools.Oras(t))
	work := t.TempDir()
	oras.dir = work
	auth := []string{"--plain-http", "-u", "ci", "-p", token}
	ref := host + "/cl/oci/oras-art:v1"
	big := strings.Repeat("0123456789abcdef", 1<<16)
	writeFile(t, work, "readme.md", "# hello from oras\n")
	writeFile(t, work, "big.bin", big)
	oras.run(append([]string{"push", ref, "--artifact-type", "application/vnd.example.thing.v1",
		"readme.md:text/markdown", "big.bin:application/octet-stream"}, auth...)...)
	out := filepath.Join(work, "pulled")
	oras.run(append([]string{"pull", ref, "-o", out}, auth...)...)
	for name, want := range map[string]string{"readme.md": "# hello from oras\n", "big.bin": big} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || string(b) != want {
			t.Errorf("pulled %s: %d bytes, %v", name, len(b), err)
		}
	}
	for i := range c.Instances() {
		oras.run(append([]string{"manifest", "fetch", c.Instance(i).Addr + "/cl/oci/oras-art:v1"}, auth...)...)
	}
}

// tarFile returns the content of name in the tar file at path.
func tarFile(t *testing.T, path, name string) string {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not in %s: %v", name, path, err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			must(t, err)
			return string(b)
		}
	}
}

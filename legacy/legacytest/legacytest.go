// Package legacytest runs a real legacy registry (distribution's registry,
// v3 built from the Go module proxy or Debian's 2.8 docker-registry) on
// filesystem storage and pushes images into it with crane, for the
// migration tests (the importer's broken-tree matrix, the proxy's end to
// end test).
package legacytest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
)

// Version selects the legacy registry binary.
type Version string

const (
	// V3 is distribution v3 (ocitools.RegistryVersion).
	V3 Version = "v3"
	// V28 is distribution 2.8 (Debian's docker-registry).
	V28 Version = "v2.8"
)

// Binary returns the registry binary of a version.
func Binary(t testing.TB, v Version) string {
	t.Helper()
	if v == V28 {
		return ocitools.Registry28(t)
	}
	return ocitools.Registry(t)
}

// config is the registry configuration: filesystem storage under dir,
// deletes enabled, foreign-layer URLs allowed (the matrix pushes one).
const config = `version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
validation:
  manifests:
    urls:
      allow:
        - ^https?://
`

// StartRegistry starts distribution v3 on filesystem storage rooted at dir
// (created if missing) on a free loopback port. It returns the registry's
// host:port and a stop function (also run at test cleanup).
func StartRegistry(t testing.TB, dir string) (host string, stop func()) {
	return StartRegistryVersion(t, V3, dir)
}

// StartRegistryVersion is StartRegistry for a given version.
func StartRegistryVersion(t testing.TB, v Version, dir string) (host string, stop func()) {
	t.Helper()
	return StartRegistryConfig(t, v, dir, "")
}

// StartRegistryConfig is StartRegistryVersion with extra top-level YAML
// appended to the configuration (an auth section, say). The registry is
// ready when /v2/ answers 200, or 401 when it asks for credentials.
func StartRegistryConfig(t testing.TB, v Version, dir, extra string) (host string, stop func()) {
	t.Helper()
	bin := Binary(t, v)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host = l.Addr().String()
	l.Close()
	cfgDir := t.TempDir()
	cfg := filepath.Join(cfgDir, "config.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(config, dir, host)+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", cfg}
	cmd := exec.Command(bin, args...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Kill()
		<-done
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || (extra != "" && resp.StatusCode == http.StatusUnauthorized) {
				return host, stop
			}
		}
		select {
		case <-done:
			t.Fatalf("%s exited: %s", bin, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("%s did not answer /v2/ within 30s: %v\n%s", bin, err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Crane runs crane with args against plain-HTTP registries and returns its
// trimmed stdout; a failure fails the test.
func Crane(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ocitools.Crane(t), append(args, "--insecure")...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("crane %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

// Image describes an image PushImage builds.
type Image struct {
	// Layers random layers of LayerSize bytes each (default 1, 1 KiB).
	Layers    int
	LayerSize int
	// Seed makes the content reproducible (and distinct across seeds).
	Seed uint64
	// OCI pushes an OCI manifest (default: Docker schema 2).
	OCI bool
}

// PushImage pushes a new image with random layers to host/repo:tag with
// crane and returns its manifest digest.
func PushImage(t testing.TB, host, repo, tag string, img Image) string {
	t.Helper()
	if img.Layers <= 0 {
		img.Layers = 1
	}
	if img.LayerSize <= 0 {
		img.LayerSize = 1024
	}
	dir := t.TempDir()
	ref := host + "/" + repo + ":" + tag
	rng := rand.New(rand.NewPCG(img.Seed, uint64(len(repo))<<32|uint64(len(tag))))
	args := []string{"append", "-t", ref}
	if img.OCI {
		args = append(args, "--oci-empty-base")
	}
	for i := range img.Layers {
		content := make([]byte, img.LayerSize)
		for j := range content {
			content[j] = byte(rng.Uint32())
		}
		args = append(args, "-f", LayerTar(t, dir, fmt.Sprintf("layer-%d", i), content))
	}
	Crane(t, args...)
	return Crane(t, "digest", ref)
}

// LayerTar writes a tar holding one file and returns its path.
func LayerTar(t testing.TB, dir, name string, content []byte) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(content); err != nil {
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

// PushIndex pushes an index of the given manifest references (each
// host/repo@digest or :tag) as host/repo:tag and returns its digest.
func PushIndex(t testing.TB, host, repo, tag string, children ...string) string {
	t.Helper()
	args := []string{"index", "append", "-t", host + "/" + repo + ":" + tag}
	for _, c := range children {
		args = append(args, "-m", c)
	}
	Crane(t, args...)
	return Crane(t, "digest", host+"/"+repo+":"+tag)
}

// PutManifest PUTs a manifest body to host/repo under ref (a tag or its
// digest) with the registry API and returns its digest.
func PutManifest(t testing.TB, host, repo, ref, mediaType string, body []byte) string {
	t.Helper()
	sum := sha256.Sum256(body)
	dg := "sha256:" + hex.EncodeToString(sum[:])
	if ref == "" {
		ref = dg
	}
	req, err := http.NewRequest(http.MethodPut, "http://"+host+"/v2/"+repo+"/manifests/"+ref, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mediaType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		t.Fatalf("PUT manifest %s/%s: %s %s", repo, ref, resp.Status, b.String())
	}
	return dg
}

// PushBlob uploads a blob to host/repo (monolithic POST+PUT) and returns
// its digest.
func PushBlob(t testing.TB, host, repo string, content []byte) string {
	t.Helper()
	sum := sha256.Sum256(content)
	dg := "sha256:" + hex.EncodeToString(sum[:])
	resp, err := http.Post("http://"+host+"/v2/"+repo+"/blobs/uploads/", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("start upload in %s: %s", repo, resp.Status)
	}
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, "http") {
		loc = "http://" + host + loc
	}
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	req, err := http.NewRequest(http.MethodPut, loc+sep+"digest="+dg, bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload blob to %s: %s", repo, resp.Status)
	}
	return dg
}

// StartUpload opens an upload session in host/repo and leaves it (an
// abandoned upload in the tree).
func StartUpload(t testing.TB, host, repo string) {
	t.Helper()
	resp, err := http.Post("http://"+host+"/v2/"+repo+"/blobs/uploads/", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("start upload in %s: %s", repo, resp.Status)
	}
}

// CopyTree copies a registry storage tree (src) to dst, so each test
// mutates its own copy.
func CopyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy tree %s: %v", src, err)
	}
}

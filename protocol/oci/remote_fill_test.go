package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// getSHA GETs path with the admin token and returns the status and the
// body's digest.
func (s *remoteServer) getSHA(t *testing.T, path string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.SetBasicAuth("anyone", testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	h := sha256.New()
	if _, err := io.Copy(h, resp.Body); err != nil {
		return resp.StatusCode, "", err
	}
	return resp.StatusCode, "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// TestRemoteConcurrentColdPulls: 16 clients pulling one image at once
// through a cold cache share one upstream GET of its 64 MiB layer, and
// each gets the whole layer, digest-verified.
func TestRemoteConcurrentColdPulls(t *testing.T) {
	up := newTestUpstream(t, authNone)
	_, _, layer := up.pushImage("big/image", "v1", "amd64", randomContent(64<<20, 11))
	up.secure()
	s := newRemoteServer(t)
	s.remote(t, "cold", "mirror", up.URL, enum.VisibilityPrivate, 24, nil)

	// The slow upstream keeps the fill going while every client joins.
	up.throttle.Store(64 << 20)
	up.resetCounts()
	const clients = 16
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	start := make(chan struct{})
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if status, _, err := s.getSHA(t, "/v2/cold/mirror/big/image/manifests/v1"); err != nil || status != http.StatusOK {
				errs <- errFmt("manifest: %d %v", status, err)
				return
			}
			status, got, err := s.getSHA(t, "/v2/cold/mirror/big/image/blobs/"+layer)
			if err != nil || status != http.StatusOK || got != layer {
				errs <- errFmt("layer: %d %s %v", status, got, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := up.count("GET", "/v2/big/image/blobs/"+layer, http.StatusOK); n != 1 {
		t.Fatalf("%d upstream GETs of the layer for %d concurrent cold pulls, want 1", n, clients)
	}
	if n := up.countPrefix("GET /v2/big/image/manifests/v1 200"); n != 1 {
		t.Fatalf("%d upstream GETs of the manifest, want 1", n)
	}
	// Cached now: a warm pull asks the upstream nothing.
	up.resetCounts()
	if status, got, err := s.getSHA(t, "/v2/cold/mirror/big/image/blobs/"+layer); err != nil || status != http.StatusOK || got != layer {
		t.Fatalf("warm pull: %d %s %v", status, got, err)
	}
	if n := up.countPrefix("GET "); n != 0 {
		t.Fatalf("%d upstream requests for a warm pull", n)
	}
}

func errFmt(format string, args ...any) error { return fmt.Errorf(format, args...) }

// TestRemoteFillSurvivesDisconnect: a client that leaves after the first
// megabyte of a slow upstream's 24 MiB layer does not stop the fill: the
// layer ends cached whole and pulls with the upstream gone.
func TestRemoteFillSurvivesDisconnect(t *testing.T) {
	up := newTestUpstream(t, authNone)
	_, _, layer := up.pushImage("slow/image", "v1", "amd64", randomContent(24<<20, 21))
	up.secure()
	s := newRemoteServer(t)
	s.remote(t, "slow", "mirror", up.URL, enum.VisibilityPrivate, 24, nil)
	up.throttle.Store(8 << 20) // about 3 s for the layer

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/v2/slow/mirror/slow/image/blobs/"+layer, nil)
	req.SetBasicAuth("anyone", testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	tg, err := s.cs.ResolveTarget(context.Background(), "slow", "mirror", "slow/image")
	if err != nil {
		t.Fatal(err)
	}
	if tg.ImageID != [16]byte{} {
		if _, err := s.cs.RemoteBlob(context.Background(), tg, [32]byte(rawDigest(t, layer))); err == nil {
			t.Fatal("the layer was cached before the slow upstream could have sent it")
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		tg, err = s.cs.ResolveTarget(context.Background(), "slow", "mirror", "slow/image")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.cs.RemoteBlob(context.Background(), tg, [32]byte(rawDigest(t, layer))); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fill did not finish after its client left")
		}
		time.Sleep(200 * time.Millisecond)
	}
	up.stop()
	if status, got, err := s.getSHA(t, "/v2/slow/mirror/slow/image/blobs/"+layer); err != nil || status != http.StatusOK || got != layer {
		t.Fatalf("cached layer with the upstream gone: %d %s %v", status, got, err)
	}
}

// TestRemoteBasicUpstream: a distribution v3 upstream with HTTP Basic
// (htpasswd): crane pulls through a remote with the right credentials get
// the upstream's digest; a remote with wrong credentials answers 502 with
// an OCI error naming no upstream; a private remote needs READ on it.
func TestRemoteBasicUpstream(t *testing.T) {
	crane := newCLI(t, ocitools.Crane(t))
	up := newTestUpstream(t, authBasic)
	d, _, _ := up.pushImage("library/tool", "1.0", "amd64", randomContent(256<<10, 31))
	up.secure()
	s := newRemoteServer(t)
	s.remote(t, "basic", "mirror", up.URL, enum.VisibilityPrivate, 24, &container.Credentials{Username: upstreamUser, Password: upstreamPassword})
	s.remote(t, "basic", "wrong", up.URL, enum.VisibilityPrivate, 24, &container.Credentials{Username: upstreamUser, Password: "not-the-password"})
	s.remote(t, "basic", "anon", up.URL, enum.VisibilityPublic, 24, nil)

	reader := s.token(t, "basic", "reader", enum.TokenScopeRead)
	crane.run("auth", "login", s.Host, "-u", "ci", "-p", reader, "--insecure")
	if got := crane.run("digest", "--insecure", s.Host+"/basic/mirror/library/tool:1.0"); got != d {
		t.Fatalf("digest %s, want %s", got, d)
	}
	crane.run("pull", "--insecure", "--format", "oci", s.Host+"/basic/mirror/library/tool:1.0", filepath.Join(t.TempDir(), "pulled"))

	for _, repo := range []string{"wrong", "anon"} {
		resp := s.do(t, http.MethodGet, "/v2/basic/"+repo+"/library/tool/manifests/1.0", nil, map[string]string{"Accept": mtOCIManifest}, true)
		body := readBody(t, resp)
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "refused the credentials") ||
			strings.Contains(body, up.Host) || strings.Contains(body, "not-the-password") {
			t.Fatalf("%s: %d %s", repo, resp.StatusCode, body)
		}
	}

	// Reading a private remote needs READ on it: anonymous callers get
	// the token challenge, a token of another namespace is refused, and
	// nothing is fetched upstream for them.
	up.resetCounts()
	resp := s.do(t, http.MethodGet, "/v2/basic/mirror/library/tool/manifests/latest", nil, nil, false)
	readBody(t, resp)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("anonymous read of a private remote: %d", resp.StatusCode)
	}
	if _, err := s.Store.CreateNamespace(context.Background(), "elsewhere"); err != nil {
		t.Fatal(err)
	}
	stranger := s.token(t, "elsewhere", "stranger", enum.TokenScopeRead, enum.TokenScopeWrite)
	resp = s.do(t, http.MethodGet, "/v2/basic/mirror/library/tool/manifests/latest", nil, map[string]string{"Authorization": "Bearer " + stranger}, false)
	readBody(t, resp)
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		t.Fatalf("another namespace's token: %d", resp.StatusCode)
	}
	if n := up.countPrefix("GET ") + up.countPrefix("HEAD "); n != 0 {
		t.Fatalf("%d upstream requests made for refused callers", n)
	}
	if strings.Contains(s.logs.String(), upstreamPassword) {
		t.Fatal("the upstream password appears in the logs")
	}
}

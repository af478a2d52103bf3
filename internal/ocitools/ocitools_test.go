package ocitools

import (
	"bytes"
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestToolsBuild makes sure every pinned tool can be fetched and built here.
func TestToolsBuild(t *testing.T) {
	for _, tc := range []struct {
		name string
		path func(testing.TB) string
		args []string
		want string
	}{
		{"crane", Crane, []string{"version"}, ""},
		{"oras", Oras, []string{"version"}, "Version"},
		{"conformance", Conformance, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.path(t)
			if tc.args == nil {
				return
			}
			out, err := exec.Command(p, tc.args...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s %v: %v\n%s", p, tc.args, err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("%s %v: unexpected output %q", p, tc.args, out)
			}
		})
	}
}

// TestVerdaccio installs the pinned Verdaccio and proxies a packument and
// its tarball from an upstream through it: the npm benchmark compares our
// npm remote with it, and that benchmark does not run in CI.
func TestVerdaccio(t *testing.T) {
	tgz := []byte("not really gzip, served verbatim")
	var upURL string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/@up/left-pad":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"_id":"@up/left-pad","name":"@up/left-pad","dist-tags":{"latest":"1.0.0"},`+
				`"versions":{"1.0.0":{"name":"@up/left-pad","version":"1.0.0","dist":{"shasum":"%x","tarball":"%s/@up/left-pad/-/left-pad-1.0.0.tgz"}}}}`,
				sha1.Sum(tgz), upURL)
		case "/@up/left-pad/-/left-pad-1.0.0.tgz":
			_, _ = w.Write(tgz)
		default:
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		}
	}))
	defer up.Close()
	upURL = up.URL
	v := StartVerdaccio(t, up.URL, time.Hour)
	get := func(u string) []byte {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s\n%s\n%s", u, resp.Status, b, v.Logs())
		}
		return b
	}
	var doc struct {
		Versions map[string]struct{ Dist struct{ Tarball string } }
	}
	if err := json.Unmarshal(get(v.URL+"@up%2fleft-pad"), &doc); err != nil {
		t.Fatal(err)
	}
	tarball := doc.Versions["1.0.0"].Dist.Tarball
	if !strings.HasPrefix(tarball, v.URL) {
		t.Fatalf("tarball URL %q is not Verdaccio's (%s)", tarball, v.URL)
	}
	if got := get(tarball); !bytes.Equal(got, tgz) {
		t.Fatalf("tarball through Verdaccio: %q", got)
	}
}

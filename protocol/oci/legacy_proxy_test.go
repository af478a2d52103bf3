package oci

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The Location rewrite keeps clients on our host for every form the
// legacy registry may send.
func TestLegacyLocalLocation(t *testing.T) {
	t.Parallel()
	p, err := newLegacyProxy(LegacyOptions{URL: "http://old:5000", Router: nopRouter{}}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"http://old:5000/v2/a/b/blobs/uploads/x?_state=s": "/v2/a/b/blobs/uploads/x?_state=s",
		"HTTP://OLD:5000/v2/a/b/blobs/uploads/x":          "/v2/a/b/blobs/uploads/x",
		"/v2/a/b/blobs/uploads/x":                         "/v2/a/b/blobs/uploads/x",
		"https://storage.example/bucket/obj?sig=1":        "https://storage.example/bucket/obj?sig=1",
	} {
		if got := p.localLocation(in); got != want {
			t.Errorf("localLocation(%q) = %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"", "ftp://old", "http://", "::"} {
		if _, err := newLegacyProxy(LegacyOptions{URL: bad, Router: nopRouter{}}, testLogger()); err == nil {
			t.Errorf("URL %q accepted", bad)
		}
	}
}

// serveAs rewrites the target name back to the legacy name in Location
// and Link.
func TestLegacyRenamingWriter(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	rw := &renamingWriter{ResponseWriter: rec, from: "/v2/acme/legacy/app/", to: "/v2/team/app/"}
	rw.Header().Set("Location", "http://us/v2/acme/legacy/app/blobs/uploads/1")
	rw.Header().Set("Link", `</v2/acme/legacy/app/tags/list?last=a&n=1>; rel="next"`)
	rw.WriteHeader(http.StatusAccepted)
	if got := rec.Header().Get("Location"); got != "http://us/v2/team/app/blobs/uploads/1" {
		t.Fatalf("Location %q", got)
	}
	if got := rec.Header().Get("Link"); got != `</v2/team/app/tags/list?last=a&n=1>; rel="next"` {
		t.Fatalf("Link %q", got)
	}
}

// nopRouter satisfies the constructor; these tests never route.
type nopRouter struct{}

func (nopRouter) Route(context.Context, string, bool) (LegacyRoute, error) { return LegacyRoute{}, nil }

func (nopRouter) HeldTarget(context.Context, string) (string, bool, error) { return "", false, nil }

func (nopRouter) GuardWrite(_ context.Context, _ string, fn func(LegacyRoute) error) error {
	return fn(LegacyRoute{})
}

func testLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

package maven

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/store"
	mavenstore "github.com/artifact-registry/artifact-registry/store/maven"
)

// FuzzParsePath checks the Maven request path parser. A path it accepts
// names exactly one file: formatting the parsed request gives back the
// requested path (unescaped), formatting and parsing again gives the same
// request, and every part is a valid Maven coordinate with no traversal,
// separator or control character. A refused path is either a bad request or
// a directory, never anything else.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{
		"/maven/acme/libs/com/example/app/1.0/app-1.0.jar",
		"/maven/acme/libs/com/example/app/1.0/app-1.0.pom.sha1",
		"/maven/acme/libs/com/example/app/1.0/app-1.0-sources.jar.sha512",
		"/maven/acme/libs/com/example/app/maven-metadata.xml",
		"/maven/acme/libs/com/example/app/maven-metadata.xml.md5",
		"/maven/acme/libs/com/example/app/1.0-SNAPSHOT/maven-metadata.xml",
		"/maven/acme/libs/com/example/app/1.0-SNAPSHOT/app-1.0-20240101.120000-1.jar",
		"/maven/acme/libs/app/maven-metadata.xml",
		"/maven/acme/libs/app/1.0/app-1.0.jar",
		"/maven/acme/libs/com/example/app/1.0/",
		"/maven/acme/libs/",
		"/maven/acme/libs/com/example/../app/1.0/app-1.0.jar",
		"/maven/acme/libs/com/example/%2e%2e/app/1.0/app-1.0.jar",
		"/maven/acme/libs/com%2fexample/app/1.0/app-1.0.jar",
		"/maven/acme/libs/com%5cexample/app/1.0/app-1.0.jar",
		"/maven/acme/libs/com.example/app/1.0/app-1.0.jar",
		"/maven/acme/libs//com/app/1.0/app-1.0.jar",
		"/maven/acme/libs/com/app/1.0/app-1.0.jar%00",
		"/maven/acme/libs/com/app/1.0/other-1.0.jar",
		"/maven/acme/libs/com/app/1.0/app-1.0.jar%zz",
		"/maven/ac%20me/li%2Bbs/com/app/1.0/app-1.0.jar",
		"/maven/acme/libs/com/app/1.0/app-1.0.jar.sha1.sha1",
		"/maven/acme/libs/com/app/-SNAPSHOT/maven-metadata.xml",
		"/maven/acme/libs/com/app/1.0-SNAPSHOT/maven-metadata.xml.sha256",
		"/maven/acme/libs/com/app/1.0/maven-metadata.xml",
		"/maven/acme/libs/com/app/.sha1",
		"/maven/acme",
		"/mavenx/acme/libs/com/app/1.0/app-1.0.jar",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, escaped string) {
		q, err := parsePath(escaped)
		if err != nil {
			if q != nil {
				t.Fatalf("parsePath(%q) returned a request and an error", escaped)
			}
			if !errors.Is(err, errBadPath) && !errors.Is(err, errDirectory) && !store.HasCode(err, mavenstore.CodeInvalid) {
				t.Fatalf("parsePath(%q): %v is neither a bad path nor a directory", escaped, err)
			}
			return
		}
		checkRequest(t, escaped, q)
		unescaped, err := url.PathUnescape(escaped)
		if err != nil {
			t.Fatalf("parsePath(%q) accepted a path that does not unescape: %v", escaped, err)
		}
		if got := formatPath(q, false); got != unescaped {
			t.Fatalf("parsePath(%q) = %+v, which formats as %q", escaped, q, got)
		}
		again, err := parsePath(formatPath(q, true))
		if err != nil {
			t.Fatalf("parsePath(%q) = %+v; its formatted path %q is refused: %v", escaped, q, formatPath(q, true), err)
		}
		if *again != *q {
			t.Fatalf("parsePath(%q) = %+v; its formatted path parses as %+v", escaped, q, again)
		}
	})
}

// formatPath is the request path of a parsed request, escaped or not.
func formatPath(q *request, escape bool) string {
	esc := func(s string) string {
		if escape {
			return url.PathEscape(s)
		}
		return s
	}
	parts := []string{esc(q.namespace), esc(q.repository)}
	if q.ref.GroupID != "" {
		for g := range strings.SplitSeq(q.ref.GroupID, ".") {
			parts = append(parts, esc(g))
		}
	}
	parts = append(parts, esc(q.ref.ArtifactID))
	if q.ref.Version != "" {
		parts = append(parts, esc(q.ref.Version))
	}
	return Prefix + strings.Join(append(parts, esc(q.name)), "/")
}

func checkRequest(t *testing.T, escaped string, q *request) {
	t.Helper()
	for _, s := range []string{q.namespace, q.repository, q.name} {
		if s == "" || s == "." || s == ".." || len(s) > 255 || strings.ContainsAny(s, "/\\") {
			t.Fatalf("parsePath(%q) accepted the segment %q", escaped, s)
		}
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] == 0x7f {
				t.Fatalf("parsePath(%q) accepted a control character in %q", escaped, s)
			}
		}
	}
	if err := q.ref.Validate(); err != nil {
		t.Fatalf("parsePath(%q) accepted invalid coordinates %+v: %v", escaped, q.ref, err)
	}
	want := q.ref.FileName
	if q.checksum != "" {
		want += "." + string(q.checksum)
	}
	if q.name != want {
		t.Fatalf("parsePath(%q): requested name %q, file %q with checksum %q", escaped, q.name, q.ref.FileName, q.checksum)
	}
	if q.ref.Version == "" && !q.isMetadata() {
		t.Fatalf("parsePath(%q): a package-level file other than %s", escaped, mavenstore.MetadataFile)
	}
}

// TestPathSeedsAccepted makes sure FuzzParsePath starts from paths of every
// layout that the parser accepts, so that its properties are exercised.
func TestPathSeedsAccepted(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"/maven/acme/libs/com/example/app/1.0/app-1.0.pom.sha1",
		"/maven/acme/libs/com/example/app/maven-metadata.xml.md5",
		"/maven/acme/libs/com/example/app/1.0-SNAPSHOT/maven-metadata.xml",
		"/maven/ac%20me/li%2Bbs/com/app/1.0/app-1.0.jar",
	} {
		if _, err := parsePath(p); err != nil {
			t.Errorf("parsePath(%q): %v", p, err)
		}
	}
}

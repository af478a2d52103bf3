package mavenpath

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
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
		q, err := Parse(escaped)
		if err != nil {
			if q != nil {
				t.Fatalf("Parse(%q) returned a request and an error", escaped)
			}
			if !errors.Is(err, ErrBadPath) && !errors.Is(err, ErrDirectory) && !errors.Is(err, mavenlayout.ErrInvalid) {
				t.Fatalf("Parse(%q): %v is neither a bad path nor a directory", escaped, err)
			}
			return
		}
		checkRequest(t, escaped, q)
		unescaped, err := url.PathUnescape(escaped)
		if err != nil {
			t.Fatalf("Parse(%q) accepted a path that does not unescape: %v", escaped, err)
		}
		if got := formatPath(q, false); got != unescaped {
			t.Fatalf("Parse(%q) = %+v, which formats as %q", escaped, q, got)
		}
		again, err := Parse(formatPath(q, true))
		if err != nil {
			t.Fatalf("Parse(%q) = %+v; its formatted path %q is refused: %v", escaped, q, formatPath(q, true), err)
		}
		if *again != *q {
			t.Fatalf("Parse(%q) = %+v; its formatted path parses as %+v", escaped, q, again)
		}
	})
}

// formatPath is the request path of a parsed request, escaped or not.
func formatPath(q *Request, escape bool) string {
	esc := func(s string) string {
		if escape {
			return url.PathEscape(s)
		}
		return s
	}
	parts := []string{esc(q.Namespace), esc(q.Repository)}
	if q.GroupID != "" {
		for g := range strings.SplitSeq(q.GroupID, ".") {
			parts = append(parts, esc(g))
		}
	}
	parts = append(parts, esc(q.ArtifactID))
	if q.Version != "" {
		parts = append(parts, esc(q.Version))
	}
	return Prefix + strings.Join(append(parts, esc(q.Name)), "/")
}

func checkRequest(t *testing.T, escaped string, q *Request) {
	t.Helper()
	for _, s := range []string{q.Namespace, q.Repository, q.Name} {
		if s == "" || s == "." || s == ".." || len(s) > 255 || strings.ContainsAny(s, "/\\") {
			t.Fatalf("Parse(%q) accepted the segment %q", escaped, s)
		}
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] == 0x7f {
				t.Fatalf("Parse(%q) accepted a control character in %q", escaped, s)
			}
		}
	}
	if err := mavenlayout.ValidateFile(q.GroupID, q.ArtifactID, q.Version, q.FileName); err != nil {
		t.Fatalf("Parse(%q) accepted invalid coordinates %+v: %v", escaped, q, err)
	}
	want := q.FileName
	if q.Checksum != "" {
		want += "." + string(q.Checksum)
	}
	if q.Name != want {
		t.Fatalf("Parse(%q): requested name %q, file %q with checksum %q", escaped, q.Name, q.FileName, q.Checksum)
	}
	if q.Version == "" && q.FileName != mavenlayout.MetadataFile {
		t.Fatalf("Parse(%q): a package-level file other than %s", escaped, mavenlayout.MetadataFile)
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
		if _, err := Parse(p); err != nil {
			t.Errorf("Parse(%q): %v", p, err)
		}
	}
}

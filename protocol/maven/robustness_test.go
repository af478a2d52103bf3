package maven

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// rawPut sends a PUT with "Expect: 100-continue" over a raw connection
// and reports the first status line the server sends before any body
// byte, and the final one after the body (if the server asked for it).
func rawPut(t *testing.T, s *testServer, path string, body []byte, auth bool) (first, final string) {
	t.Helper()
	u, _ := url.Parse(s.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	hdr := fmt.Sprintf("PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nExpect: 100-continue\r\nUser-Agent: Apache-Maven/3.8.7\r\n", path, u.Host, len(body))
	if auth {
		hdr += "Authorization: Basic " + basic("deployer", testToken) + "\r\n"
	}
	if _, err := conn.Write([]byte(hdr + "\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	readStatus := func() string {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.Status
	}
	first = readStatus()
	if !strings.HasPrefix(first, "100") {
		return first, ""
	}
	if _, err := conn.Write(body); err != nil {
		t.Fatal(err)
	}
	return first, readStatus()
}

func TestExpectContinue(t *testing.T) {
	t.Parallel()
	s := newMavenServer(t)
	path := relBase + "/1.0.0/anchor-lib-1.0.0.jar"
	// Refused before the body is wanted: no 100 Continue.
	if first, _ := rawPut(t, s, path, []byte("jar"), false); !strings.HasPrefix(first, "401") {
		t.Fatalf("unauthenticated: %s", first)
	}
	if first, _ := rawPut(t, s, "/maven/acme/releases/com/example/../x", []byte("jar"), true); !strings.HasPrefix(first, "400") {
		t.Fatalf("bad path: %s", first)
	}
	// Accepted: 100 Continue, then 201.
	if first, final := rawPut(t, s, path, []byte("jar"), true); !strings.HasPrefix(first, "100") || !strings.HasPrefix(final, "201") {
		t.Fatalf("upload: %s then %s", first, final)
	}
	// A release conflict decided from the announced size: no body sent.
	if first, _ := rawPut(t, s, path, []byte("other jar"), true); !strings.HasPrefix(first, "409") {
		t.Fatalf("conflicting re-deploy: %s", first)
	}
	// Same size: the bytes must be read to decide.
	if first, final := rawPut(t, s, path, []byte("JAR"), true); !strings.HasPrefix(first, "100") || !strings.HasPrefix(final, "409") {
		t.Fatalf("same-size re-deploy: %s then %s", first, final)
	}
	if first, final := rawPut(t, s, path, []byte("jar"), true); !strings.HasPrefix(first, "100") || !strings.HasPrefix(final, "200") {
		t.Fatalf("identical re-deploy: %s then %s", first, final)
	}
}

// A writer that cannot get the package-row lock within the lock timeout
// gets 503 with Retry-After, and nothing is stored.
func TestLockTimeoutIs503(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, serverOpts{store: store.Options{LockTimeout: 300 * time.Millisecond}})
	s.repo(t, "acme", "releases", enum.FormatMaven, enum.VisibilityPublic)
	s.put(t, relBase+"/1.0.0/anchor-lib-1.0.0.pom", pom("1.0.0"), http.StatusCreated)

	ctx := context.Background()
	tx, err := s.Store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM maven_packages WHERE artifact_id = 'anchor-lib' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	r := s.do(t, http.MethodPut, relBase+"/1.0.1/anchor-lib-1.0.1.pom", pom("1.0.1"), true)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("PUT under a held package lock: %d %v %s", r.status, r.header, r.body)
	}
	_ = tx.Rollback(ctx)
	if n := s.count(t, `SELECT count(*) FROM maven_versions WHERE version = '1.0.1'`); n != 0 {
		t.Fatal("the refused upload created its version")
	}
	if n := s.count(t, `SELECT count(*) FROM upload_sessions`); n != 0 {
		t.Fatal("upload session left behind")
	}
	s.put(t, relBase+"/1.0.1/anchor-lib-1.0.1.pom", pom("1.0.1"), http.StatusCreated)
	s.checkInvariants(t)
}

// A crash between a version's commit and the refresh of the package
// metadata leaves the stored document stale or missing: reads render the
// document from the rows meanwhile, and the next metadata upload (every
// mvn deploy ends with one) stores it again.
func TestMetadataMissingIsRenderedAndRepaired(t *testing.T) {
	t.Parallel()
	s := newMavenServer(t)
	s.deployFile(t, relBase+"/1.0.0/anchor-lib-1.0.0.pom", pom("1.0.0"))
	stored := s.get(t, relBase+"/maven-metadata.xml", http.StatusOK).body
	dropMetadataRow(t, s)
	if got := s.get(t, relBase+"/maven-metadata.xml", http.StatusOK).body; got != stored {
		t.Fatalf("rendered document differs from the stored one:\n%s\n%s", got, stored)
	}
	if got := s.get(t, relBase+"/maven-metadata.xml.sha1", http.StatusOK).body; got != hexSum("sha1", []byte(stored)) {
		t.Fatal("rendered document's sha1")
	}
	s.put(t, relBase+"/maven-metadata.xml", []byte(stored), http.StatusCreated)
	if n := s.count(t, `SELECT count(*) FROM maven_files WHERE maven_version_id IS NULL`); n != 1 {
		t.Fatalf("%d package-level rows after the repair", n)
	}
}

func dropMetadataRow(t *testing.T, s *testServer) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, s.Store.Pool(), func(tx pgx.Tx) error {
		var (
			ns  [16]byte
			id  int64
			sha []byte
		)
		if err := tx.QueryRow(ctx, `DELETE FROM maven_files WHERE maven_version_id IS NULL
			RETURNING namespace_id, blob_storage_attachment_id, blob_sha256`).Scan(&ns, &id, &sha); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM blob_storage_attachments WHERE namespace_id = $1 AND id = $2 AND sha256 = $3`, ns, id, sha); err != nil {
			return err
		}
		// The accounting trigger records the repository size delta of
		// the deleted row, as for a real removal.
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

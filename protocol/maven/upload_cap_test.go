package maven

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// A deploy to a repository that already holds its cap of open upload
// sessions (every protocol's) is refused with 429 and a message, and
// stores nothing; once a session is gone the deploy goes through.
func TestUploadSessionCapIs429(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, serverOpts{store: store.Options{MaxUploadSessionsPerRepository: 1}})
	s.repo(t, "acme", "releases", enum.FormatMaven, enum.VisibilityPublic)
	ctx := context.Background()
	var ns, repo uuid.UUID
	if err := s.Store.Pool().QueryRow(ctx, `SELECT namespace_id, id FROM repositories WHERE name = 'releases'`).Scan(&ns, &repo); err != nil {
		t.Fatal(err)
	}
	held, err := s.Store.StartUpload(ctx, ns, repo, store.UploadResumable)
	if err != nil {
		t.Fatal(err)
	}
	r := s.do(t, http.MethodPut, relBase+"/1.0.0/anchor-lib-1.0.0.pom", pom("1.0.0"), true)
	if r.status != http.StatusTooManyRequests || !strings.Contains(r.body, "upload sessions") {
		t.Fatalf("deploy at the cap: %d %s", r.status, r.body)
	}
	if n := s.count(t, `SELECT count(*) FROM maven_versions`); n != 0 {
		t.Fatal("the refused deploy created a version")
	}
	if err := s.Store.CancelUpload(ctx, held.Ref()); err != nil {
		t.Fatal(err)
	}
	s.put(t, relBase+"/1.0.0/anchor-lib-1.0.0.pom", pom("1.0.0"), http.StatusCreated)
}

package maven

import (
	"context"
	"testing"

	"github.com/google/uuid"
)

func TestHoldingRepositories(t *testing.T) {
	f, remote := newRemoteFixture(t)
	ctx := context.Background()
	// A second hosted repository that does not hold the package.
	repo2, mr2 := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	if _, err := f.core.Pool().Exec(ctx, `INSERT INTO repositories (id, namespace_id, name, format, kind, visibility)
		VALUES ($1, $2, 'other', 1, 0, 0)`, repo2, f.t.NamespaceID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.core.Pool().Exec(ctx, `INSERT INTO maven_repositories (id, namespace_id, repository_id)
		VALUES ($1, $2, $3)`, mr2, f.t.NamespaceID, repo2); err != nil {
		t.Fatal(err)
	}
	f.put(t, "1.0", "lib-1.0.jar", "jar")
	// The proxy's cached copy of the same name does not count: only
	// hosted repositories hold names.
	if _, err := f.cacheRemote(t, remote, FileRef{GroupID: "com.example", ArtifactID: "lib", Version: "2.0", FileName: "lib-2.0.jar"}, "x"); err != nil {
		t.Fatal(err)
	}
	ids := []uuid.UUID{f.t.RepositoryID, repo2, remote.RepositoryID}
	got, err := f.st.HoldingRepositories(ctx, f.t.NamespaceID, ids, "com.example", "lib")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[f.t.RepositoryID] {
		t.Fatalf("holding com.example:lib = %v, want only %s", got, f.t.RepositoryID)
	}
	for _, c := range [][2]string{{"com.example", "other"}, {"com", "example"}, {"com.example.lib", "lib"}} {
		got, err := f.st.HoldingRepositories(ctx, f.t.NamespaceID, ids, c[0], c[1])
		if err != nil || len(got) != 0 {
			t.Fatalf("holding %s:%s = %v, %v; want none", c[0], c[1], got, err)
		}
	}
	got, err = f.st.HoldingRepositories(ctx, f.t.NamespaceID, nil, "com.example", "lib")
	if err != nil || len(got) != 0 {
		t.Fatalf("no repositories: %v, %v", got, err)
	}
}

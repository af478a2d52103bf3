package maven

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
)

// newRemoteFixture adds a Maven proxy acme/central to a fixture.
func newRemoteFixture(t *testing.T) (*fixture, *Target) {
	t.Helper()
	f := newFixture(t)
	ctx := context.Background()
	repo, remote := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	if _, err := f.core.Pool().Exec(ctx, `INSERT INTO repositories (id, namespace_id, name, format, kind, visibility)
		VALUES ($1, $2, 'central', 1, 2, 2)`, repo, f.t.NamespaceID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.core.Pool().Exec(ctx, `INSERT INTO maven_remote_repositories (id, namespace_id, repository_id, url)
		VALUES ($1, $2, $3, 'http://127.0.0.1:1/repo')`, remote, f.t.NamespaceID, repo); err != nil {
		t.Fatal(err)
	}
	tg, err := f.st.ResolveTarget(context.Background(), "acme", "central")
	if err != nil {
		t.Fatal(err)
	}
	return f, tg
}

func (f *fixture) cacheRemote(t *testing.T, tg *Target, ref FileRef, body string) (*RemoteFile, error) {
	t.Helper()
	st, err := f.st.StageRemoteFile(context.Background(), tg, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	return f.st.CommitRemoteFile(context.Background(), tg, ref, st, RemoteFileMeta{})
}

func TestRemoteSettingsAndBadInput(t *testing.T) {
	f, tg := newRemoteFixture(t)
	if tg.Remote == nil || tg.Remote.URL != "http://127.0.0.1:1/repo" || tg.Remote.MetadataValidity != time.Hour || // the column defaults
		tg.Remote.NegativeTTL != 15*time.Minute || tg.Remote.HasCredentials || tg.MavenRepositoryID != [16]byte{} {
		t.Fatalf("target %+v %+v", tg, tg.Remote)
	}
	bad := []RemoteInput{
		{URL: ""}, {URL: "ftp://x"}, {URL: "http://user:pw@x"}, {URL: "http://x/?q=1"}, {URL: "http://x/" + strings.Repeat("a", 1100)},
		{URL: "http://x", MetadataCacheValidityHours: ptr(-1)}, {URL: "http://x", CacheValidityHours: ptr(8761)},
		{URL: "http://x", NegativeCacheMinutes: ptr(1441)},
	}
	for _, in := range bad {
		if _, err := f.st.NewRemote(in); !store.HasCode(err, store.CodeInvalidInput) {
			t.Errorf("NewRemote(%+v): %v", in, err)
		}
	}
	if _, err := f.st.UpdateRemote(RemoteUpdate{}); !store.HasCode(err, store.CodeInvalidInput) {
		t.Errorf("empty update: %v", err)
	}
	// Credentials need a keyring.
	if _, err := f.st.NewRemote(RemoteInput{URL: "http://x", Credentials: &container.Credentials{Username: "u", Password: "p"}}); err == nil {
		t.Error("credentials without a keyring accepted")
	}
	// A remote's file names follow the layout.
	if _, err := f.cacheRemote(t, tg, FileRef{GroupID: "com.example", ArtifactID: "lib", Version: "1.0", FileName: "../x"}, "x"); !store.HasCode(err, CodeInvalid) {
		t.Errorf("bad file name: %v", err)
	}
	if n := count(t, f, `SELECT count(*) FROM upload_sessions`); n != 0 {
		t.Errorf("%d upload sessions left by a refused file", n)
	}
}

func ptr(v int) *int { return &v }

func count(t *testing.T, f *fixture, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := f.core.Pool().QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Concurrent refreshes of one metadata document with different bytes
// leave exactly one cached copy, its attachment the only one, and the
// replaced blobs detached.
func TestRemoteConcurrentMetadataRefresh(t *testing.T) {
	f, tg := newRemoteFixture(t)
	ref := FileRef{GroupID: "com.example", ArtifactID: "lib", FileName: mavenlayout.MetadataFile}
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.cacheRemote(t, tg, ref, fmt.Sprintf("<metadata>%d</metadata>", i%3))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil && !store.HasCode(err, store.CodeRetryable) {
			t.Fatal(err)
		}
	}
	if n := count(t, f, `SELECT count(*) FROM maven_remote_files`); n != 1 {
		t.Fatalf("%d cached copies", n)
	}
	if n := count(t, f, `SELECT count(*) FROM blob_storage_attachments`); n != 1 {
		t.Fatalf("%d attachments for one cached file", n)
	}
	if n := count(t, f, `SELECT count(*) FROM upload_sessions`); n != 0 {
		t.Fatalf("%d upload sessions left", n)
	}
}

// An eviction racing with fills of the same package never leaves a file
// without its attachment or a version without its package.
func TestRemoteEvictionRacesFills(t *testing.T) {
	f, tg := newRemoteFixture(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := f.cacheRemote(t, tg, FileRef{GroupID: "com.example", ArtifactID: "lib", Version: fmt.Sprintf("1.%d", i),
				FileName: fmt.Sprintf("lib-1.%d.jar", i)}, fmt.Sprintf("jar %d", i))
			if err != nil && !store.HasCode(err, store.CodeRetryable) {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			ids, err := f.st.StaleRemoteVersions(ctx, tg.NamespaceID, time.Now().Add(time.Hour), 100)
			if err != nil {
				t.Error(err)
				return
			}
			if len(ids) == 0 {
				return
			}
			if err := f.core.WithTx(ctx, func(tx pgx.Tx) error {
				_, _, err := f.st.EvictRemoteVersions(ctx, tx, tg.NamespaceID, ids, nil)
				return err
			}); err != nil && !store.HasCode(err, store.CodeRetryable) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := count(t, f, `SELECT count(*) FROM maven_remote_files f LEFT JOIN blob_storage_attachments a
		ON a.namespace_id = f.namespace_id AND a.id = f.blob_storage_attachment_id WHERE a.id IS NULL`); n != 0 {
		t.Fatalf("%d files without their attachment", n)
	}
	if n := count(t, f, `SELECT (SELECT count(*) FROM blob_storage_attachments) - (SELECT count(*) FROM maven_remote_files)`); n != 0 {
		t.Fatalf("%d attachments without a file", n)
	}
	if n := count(t, f, `SELECT count(*) FROM maven_remote_versions v WHERE NOT EXISTS (SELECT 1 FROM maven_remote_packages p
		WHERE p.namespace_id = v.namespace_id AND p.id = v.maven_remote_package_id)`); n != 0 {
		t.Fatalf("%d versions without their package", n)
	}
}

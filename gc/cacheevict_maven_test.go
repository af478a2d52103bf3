package gc

import (
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/lifecycle"
	"github.com/artifact-registry/artifact-registry/store/maven"
)

// TestCacheEvictMavenVersions: gc:cache-evict evicts the cached versions
// of a Maven proxy not downloaded within the namespace's
// KEEP_DOWNLOADED_WITHIN days with their files (blobs detached, GC
// candidates), keeps a version downloaded since, and evicts a package with
// its last version (its maven-metadata.xml too).
func TestCacheEvictMavenVersions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	ms := maven.New(e.st)
	ns := testsupport.Namespace(t, e.st, "mvn-evict")
	child, err := ms.NewRemote(maven.RemoteInput{URL: "http://127.0.0.1:5999"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.CreateRepository(e.ctx, store.NewRepository{Namespace: "mvn-evict", Name: "central", Format: enum.FormatMaven,
		Kind: enum.KindRemote, Visibility: enum.VisibilityPrivate, Child: child}); err != nil {
		t.Fatal(err)
	}
	days := 2
	if _, err := lifecycle.New(e.st, lifecycle.Options{}).Set(e.ctx, lifecycle.Scope{NamespaceID: ns.ID, NamespaceSlug: "mvn-evict"},
		lifecycle.Input{Enabled: true, MinAgeDays: 1, Rules: []lifecycle.Rule{{Type: lifecycle.KeepDownloadedWithin, Days: &days}}}); err != nil {
		t.Fatal(err)
	}
	tg, err := ms.ResolveTarget(e.ctx, "mvn-evict", "central")
	if err != nil {
		t.Fatal(err)
	}
	cache := func(artifact, version, name, body string) *maven.RemoteFile {
		t.Helper()
		st, err := ms.StageRemoteFile(e.ctx, tg, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		f, err := ms.CommitRemoteFile(e.ctx, tg, maven.FileRef{GroupID: "com.example", ArtifactID: artifact, Version: version, FileName: name}, st, maven.RemoteFileMeta{})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	cache("gone", "1.0", "gone-1.0.jar", "gone jar")
	cache("gone", "", mavenlayout.MetadataFile, "<metadata>gone</metadata>")
	cache("lib", "1.0", "lib-1.0.jar", "old jar")
	used := cache("lib", "2.0", "lib-2.0.jar", "used jar")
	e.clock.Advance(3 * 24 * time.Hour)
	if err := ms.RecordCounts(e.ctx, []maven.Count{ms.RemoteAccessCount(tg, maven.RemoteAccess{File: used})}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.FoldCounterDeltas(e.ctx, ns.ID, 0, 0); err != nil {
		t.Fatal(err)
	}
	res, err := e.g.CacheEvict(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.MavenVersions != 2 || res.Candidates != 3 {
		t.Fatalf("run: %+v, want the two stale versions (and the emptied package's metadata) evicted", res)
	}
	var left []string
	rows, err := e.pool.Query(e.ctx, `SELECT p.artifact_id || ':' || coalesce(v.version, '') || ':' || f.file_name FROM maven_remote_files f
		JOIN maven_remote_packages p ON p.namespace_id = f.namespace_id AND p.id = f.maven_remote_package_id
		LEFT JOIN maven_remote_versions v ON v.namespace_id = f.namespace_id AND v.id = f.maven_remote_version_id
		WHERE f.namespace_id = $1 ORDER BY 1`, ns.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		left = append(left, s)
	}
	rows.Close()
	if len(left) != 1 || left[0] != "lib:2.0:lib-2.0.jar" {
		t.Fatalf("left cached: %v", left)
	}
	var pkgs int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM maven_remote_packages WHERE namespace_id = $1`, ns.ID).Scan(&pkgs); err != nil || pkgs != 1 {
		t.Fatalf("%d packages left (%v), want lib only", pkgs, err)
	}
	if res, err := e.g.CacheEvict(e.ctx); err != nil || res.MavenVersions != 0 {
		t.Fatalf("second run: %+v %v", res, err)
	}
}

package npm

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

func (f *npmFixture) publishTarball(name, version string, tgz []byte, hook WriteHook) (*PublishResult, error) {
	return f.publishTagged(name, version, tgz, hook, "latest")
}

func (f *npmFixture) publishTagged(name, version string, tgz []byte, hook WriteHook, tags ...string) (*PublishResult, error) {
	s512, s1 := sha512.Sum512(tgz), sha1.Sum(tgz)
	pj, _ := json.Marshal(map[string]any{
		"name": name, "version": version, "_id": name + "@" + version, "_hasShrinkwrap": false,
		"_npmUser": map[string]string{"name": "admin"},
		"dist":     map[string]any{"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]), "shasum": hex.EncodeToString(s1[:])},
	})
	return f.s.Publish(f.ctx, f.repo, PublishRequest{Name: name, Version: version, PackageJSON: pj,
		FileName: name + "-" + version + ".tgz", Tarball: tgz, SHA1: s1, Tags: tags, Hook: hook})
}

// leftovers counts what a publish of tgz can leave: the blob row, its
// object, attachments and upload sessions of the namespace.
func (f *npmFixture) leftovers(t *testing.T, tgz []byte) (blobRows, attachments, sessions int, object bool) {
	t.Helper()
	sum := sha256.Sum256(tgz)
	err := f.pool.QueryRow(f.ctx, `
		SELECT (SELECT count(*) FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2),
		       (SELECT count(*) FROM blob_storage_attachments WHERE namespace_id = $1 AND sha256 = $2),
		       (SELECT count(*) FROM upload_sessions WHERE namespace_id = $1)`,
		f.repo.NamespaceID, sum[:]).Scan(&blobRows, &attachments, &sessions)
	if err != nil {
		t.Fatal(err)
	}
	object, err = f.s.core.Objects().Exists(f.ctx, objstore.BlobKey(f.repo.NamespaceID, sum))
	if err != nil {
		t.Fatal(err)
	}
	return blobRows, attachments, sessions, object
}

// TestNpmPublishFailureLeavesNothing: the tarball is staged before the
// transaction, so a publish that fails inside it (here its hook, the last
// step before the bytes move) must leave no version, no blob row, no
// object and no upload session.
func TestNpmPublishFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	f := newNpmFixture(t)
	tgz := npmTestTarball(t, "1.0.0")
	boom := errors.New("hook failed")
	_, err := f.publishTarball("lib", "1.0.0", tgz, func(context.Context, pgx.Tx, PackageRef) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("publish: %v, want the hook's error", err)
	}
	if b, a, s, o := f.leftovers(t, tgz); b+a+s != 0 || o {
		t.Fatalf("after a failed publish: %d blob rows, %d attachments, %d sessions, object %v", b, a, s, o)
	}
	var versions int
	if err := f.pool.QueryRow(f.ctx, `SELECT count(*) FROM npm_versions WHERE namespace_id = $1`, f.repo.NamespaceID).Scan(&versions); err != nil || versions != 0 {
		t.Fatalf("versions after a failed publish: %d (%v)", versions, err)
	}
	// The same publish then succeeds and leaves exactly one of each.
	res, err := f.publishTarball("lib", "1.0.0", tgz, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.BlobCreated {
		t.Fatal("the retried publish reports a deduplicated blob")
	}
	if b, a, s, o := f.leftovers(t, tgz); b != 1 || a != 1 || s != 0 || !o {
		t.Fatalf("after the publish: %d blob rows, %d attachments, %d sessions, object %v", b, a, s, o)
	}
}

// TestNpmConcurrentSameVersion: eight publishes of one version, each with
// its own tarball, race; one wins, the others get CodeVersionExists
// (from the pre-check or from the unique index inside the transaction) and
// leave no trace of their tarballs.
func TestNpmConcurrentSameVersion(t *testing.T) {
	t.Parallel()
	f := newNpmFixture(t)
	const n = 8
	tgzs := make([][]byte, n)
	for i := range tgzs {
		tgzs[i] = npmTestTarball(t, fmt.Sprintf("1.0.0-build.%d", i))
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, errs[i] = f.publishTarball("lib", "1.0.0", tgzs[i], nil) })
	}
	wg.Wait()
	wins := 0
	for i, err := range errs {
		b, a, s, o := f.leftovers(t, tgzs[i])
		switch {
		case err == nil:
			wins++
			if b != 1 || a != 1 || !o {
				t.Errorf("winner %d: %d blob rows, %d attachments, object %v", i, b, a, o)
			}
		case store.HasCode(err, CodeVersionExists):
			if b+a != 0 || o {
				t.Errorf("loser %d left %d blob rows, %d attachments, object %v", i, b, a, o)
			}
		default:
			t.Errorf("publish %d: %v", i, err)
		}
		if s != 0 {
			t.Errorf("%d upload sessions left", s)
		}
	}
	if wins != 1 {
		t.Fatalf("%d publishes of one version won", wins)
	}
}

// TestNpmPublishRestoresCollectedObject: a dedup publish onto a blob row
// whose object a crashed GC cleanup deleted (row and live candidate kept)
// finds the object missing under the row lock and writes it again from
// the publish's own bytes; the candidate is cleared by the attachment.
func TestNpmPublishRestoresCollectedObject(t *testing.T) {
	t.Parallel()
	f := newNpmFixture(t)
	tgz := npmTestTarball(t, "1.0.0")
	if _, err := f.publishTarball("a", "1.0.0", tgz, nil); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(tgz)
	key := objstore.BlobKey(f.repo.NamespaceID, sum)
	if _, err := f.pool.Exec(f.ctx, `INSERT INTO gc_blob_review_queue (namespace_id, sha256, review_after) VALUES ($1, $2, now())`,
		f.repo.NamespaceID, sum[:]); err != nil {
		t.Fatal(err)
	}
	if err := f.s.core.Objects().Delete(f.ctx, key); err != nil {
		t.Fatal(err)
	}
	res, err := f.publishTarball("b", "1.0.0", tgz, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.BlobCreated {
		t.Fatal("a second blob row was created")
	}
	if b, a, s, o := f.leftovers(t, tgz); b != 1 || a != 2 || s != 0 || !o {
		t.Fatalf("after the dedup publish: %d blob rows, %d attachments, %d sessions, object %v", b, a, s, o)
	}
	var candidates int
	if err := f.pool.QueryRow(f.ctx, `SELECT count(*) FROM gc_blob_review_queue WHERE namespace_id = $1`, f.repo.NamespaceID).Scan(&candidates); err != nil || candidates != 0 {
		t.Fatalf("candidates after the attach: %d (%v)", candidates, err)
	}
}

// insertNpmRows adds n rows to an npm table for a package by SQL, fast
// enough to reach the per-package limits (publishing 25,000 versions is not).
func (f *npmFixture) insertNpmRows(t *testing.T, sql string, pkg PackageRef, n int) {
	t.Helper()
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7())
	}
	if _, err := f.pool.Exec(f.ctx, sql, f.repo.NamespaceID, pkg.PackageID, ids); err != nil {
		t.Fatal(err)
	}
}

// TestNpmPublishLimits: 25,000 versions per package, unpublished
// (soft-deleted) versions included, counted row by row once the buffered
// counter is within exactVersionsMargin of the limit (it lags by what is
// not folded yet), and 1,000 dist-tags; both refused before any byte is
// stored.
func TestNpmPublishLimits(t *testing.T) {
	t.Parallel()
	f := newNpmFixture(t)
	pkg := f.publish(t, "lib", "1.0.0")
	f.insertNpmRows(t, `
		INSERT INTO npm_versions (id, namespace_id, npm_package_id, version, package_json, soft_deleted_at)
		SELECT x.id, $1, $2, '0.0.' || x.n, '{}', now() FROM unnest($3::uuid[]) WITH ORDINALITY AS x(id, n)`,
		pkg, MaxVersionsPerPackage-2)
	// The folded counter lags: it has reached the margin where a publish
	// counts the rows, not the limit.
	if _, err := f.pool.Exec(f.ctx, `UPDATE npm_packages SET versions_count = $3 WHERE namespace_id = $1 AND id = $2`,
		f.repo.NamespaceID, pkg.PackageID, MaxVersionsPerPackage-exactVersionsMargin); err != nil {
		t.Fatal(err)
	}
	if _, err := f.publishTarball("lib", "1.0.1", npmTestTarball(t, "1.0.1"), nil); err != nil {
		t.Fatalf("publish of version 25,000: %v", err)
	}
	tgz := npmTestTarball(t, "1.0.2")
	_, err := f.publishTarball("lib", "1.0.2", tgz, nil)
	if !store.HasCode(err, CodeLimit) {
		t.Fatalf("publish of version 25,001: %v, want CodeLimit", err)
	}
	if b, a, s, o := f.leftovers(t, tgz); b+a+s != 0 || o {
		t.Fatalf("a refused publish left %d blob rows, %d attachments, %d sessions, object %v", b, a, s, o)
	}

	tagged := f.publish(t, "tagged", "1.0.0") // one tag: latest
	f.insertNpmRows(t, `
		INSERT INTO npm_tags (id, namespace_id, npm_package_id, npm_version_id, name)
		SELECT x.id, $1, $2, t.npm_version_id, 'tag-' || x.n
		FROM unnest($3::uuid[]) WITH ORDINALITY AS x(id, n), npm_tags t
		WHERE t.namespace_id = $1 AND t.npm_package_id = $2 AND t.name = 'latest'`,
		tagged, MaxTagsPerPackage-2)
	if _, err := f.pool.Exec(f.ctx, `UPDATE npm_packages SET tags_count = $3 WHERE namespace_id = $1 AND id = $2`,
		f.repo.NamespaceID, tagged.PackageID, MaxTagsPerPackage-exactTagsMargin); err != nil {
		t.Fatal(err)
	}
	publishTagged := func(v string, tags ...string) error {
		_, err := f.publishTagged("tagged", v, npmTestTarball(t, v), nil, tags...)
		return err
	}
	// 999 tags: moving latest keeps 999, a new tag makes 1,000, one more is refused.
	if err := publishTagged("1.0.1", "latest"); err != nil {
		t.Fatalf("moving latest: %v", err)
	}
	if err := publishTagged("1.0.2", "next"); err != nil {
		t.Fatalf("tag 1,000: %v", err)
	}
	if err := publishTagged("1.0.3", "beta"); !store.HasCode(err, CodeLimit) {
		t.Fatalf("tag 1,001: %v, want CodeLimit", err)
	}
}

// TestNpmPublishCheckReadsOnePackage: the publish check reads the package
// rows of its name and probes the version it publishes
// (npm_versions_package_idx), not every package or version row of the
// namespace's partition: here 20,000 other packages and a package of
// 20,000 versions share the partition. Both the custom plan and the
// generic one, which the prepared statement runs after five calls.
func TestNpmPublishCheckReadsOnePackage(t *testing.T) {
	t.Parallel()
	f := newNpmFixture(t)
	big := f.publish(t, "big", "1.0.0")
	f.insertNpmRows(t, `
		INSERT INTO npm_versions (id, namespace_id, npm_package_id, version, package_json, soft_deleted_at)
		SELECT x.id, $1, $2, '0.0.' || x.n, '{}', CASE WHEN x.n % 10 = 0 THEN now() END
		FROM unnest($3::uuid[]) WITH ORDINALITY AS x(id, n)`, big, 20000)
	f.insertNpmRows(t, `
		INSERT INTO npm_packages (id, namespace_id, npm_repository_id, name, soft_deleted_at)
		SELECT x.id, $1, p.npm_repository_id, 'other' || x.n, CASE WHEN x.n % 10 = 0 THEN now() END
		FROM unnest($3::uuid[]) WITH ORDINALITY AS x(id, n), npm_packages p WHERE p.namespace_id = $1 AND p.id = $2`, big, 20000)
	f.publish(t, "lib", "1.0.0")
	if _, err := f.pool.Exec(f.ctx, `ANALYZE npm_versions, npm_packages`); err != nil {
		t.Fatal(err)
	}
	part, err := partition.Of(f.ctx, f.pool, f.repo.NamespaceID)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := f.pool.Acquire(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(f.ctx, "PREPARE npm_check(uuid, uuid, text, text) AS "+publishLockPartitionSQL[part]); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := conn.Exec(f.ctx, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		var plan []map[string]any
		err := conn.QueryRow(f.ctx, fmt.Sprintf(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE npm_check('%s', '%s', 'lib', '1.0.1')`,
			f.repo.NamespaceID, f.repo.NpmRepositoryID)).Scan(&plan)
		if err != nil {
			t.Fatal(err)
		}
		read := map[string]float64{}
		var walk func(n map[string]any)
		walk = func(n map[string]any) {
			if rel, _ := n["Relation Name"].(string); rel != "" {
				rows, _ := n["Actual Rows"].(float64)
				loops, _ := n["Actual Loops"].(float64)
				removed, _ := n["Rows Removed by Filter"].(float64)
				read[strings.TrimSuffix(rel, fmt.Sprintf("_p%02d", part))] += rows*loops + removed
			}
			subs, _ := n["Plans"].([]any)
			for _, sub := range subs {
				walk(sub.(map[string]any))
			}
		}
		walk(plan[0]["Plan"].(map[string]any))
		if read["npm_versions"] > 10 || read["npm_packages"] > 10 {
			t.Errorf("%s: the publish check of lib read %.0f npm_packages and %.0f npm_versions rows", mode, read["npm_packages"], read["npm_versions"])
		}
	}
}

// TestNpmPublishAddsMissingLatest: a publish that does not name "latest"
// leaves the package's latest tag where it is, and adds one (to the new
// version) when the package has none; the result's tags say which.
func TestNpmPublishAddsMissingLatest(t *testing.T) {
	t.Parallel()
	f := newNpmFixture(t)
	latestOf := func() string {
		t.Helper()
		var v string
		err := f.pool.QueryRow(f.ctx, `SELECT v.version FROM npm_tags t
			JOIN npm_versions v ON v.namespace_id = t.namespace_id AND v.id = t.npm_version_id
			JOIN npm_packages p ON p.namespace_id = t.namespace_id AND p.id = t.npm_package_id
			WHERE t.namespace_id = $1 AND p.name = 'lib' AND t.name = 'latest'`, f.repo.NamespaceID).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if _, err := f.publishTagged("lib", "1.0.0", npmTestTarball(t, "1.0.0"), nil, "next"); err != nil {
		t.Fatal(err)
	}
	if got := latestOf(); got != "1.0.0" {
		t.Fatalf("latest after the first publish: %q", got)
	}
	res, err := f.publishTagged("lib", "2.0.0-beta.1", npmTestTarball(t, "2.0.0-beta.1"), nil, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if got := latestOf(); got != "1.0.0" || strings.Join(res.Tags, ",") != "beta" {
		t.Fatalf("a beta publish moved latest to %q, tags %v", got, res.Tags)
	}
	if _, err := f.pool.Exec(f.ctx, `DELETE FROM npm_tags WHERE namespace_id = $1 AND name = 'latest'`, f.repo.NamespaceID); err != nil {
		t.Fatal(err)
	}
	res, err = f.publishTagged("lib", "1.1.0", npmTestTarball(t, "1.1.0"), nil, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if got := latestOf(); got != "1.1.0" || strings.Join(res.Tags, ",") != "beta,latest" {
		t.Fatalf("a publish to a package without latest: latest %q, tags %v", got, res.Tags)
	}
	var tagDeltas int64
	if err := f.pool.QueryRow(f.ctx, `SELECT coalesce(sum(delta), 0) FROM counter_deltas
		WHERE namespace_id = $1 AND target = 8 AND field = 4`, f.repo.NamespaceID).Scan(&tagDeltas); err != nil {
		t.Fatal(err)
	}
	if tagDeltas != 4 { // next, latest; beta; latest again (its deletion above recorded none)
		t.Fatalf("tags_count deltas sum to %d, want 4", tagDeltas)
	}
}

// TestNpmPublishStaged: a tarball staged from a stream (StageStream, as
// the npm protocol decodes it from the request body) publishes with its
// SHA-1 recorded; a refused publish of a staged tarball (schema failure
// before the transaction, a hook failure inside it) discards it: no blob
// row, no object, no session.
func TestNpmPublishStaged(t *testing.T) {
	t.Parallel()
	f := newNpmFixture(t)
	ref := store.UploadRef{NamespaceID: f.repo.NamespaceID, RepositoryID: f.repo.RepositoryID}
	tgz := npmTestTarball(t, "1.0.0")
	s1 := sha1.Sum(tgz)
	stage := func() *store.StagedBlob {
		t.Helper()
		b, err := f.s.core.StageStream(f.ctx, ref, bytes.NewReader(tgz))
		if err != nil {
			t.Fatal(err)
		}
		if b.Size() != int64(len(tgz)) || b.SHA256() != sha256.Sum256(tgz) {
			t.Fatalf("staged %d bytes, digest %x", b.Size(), b.SHA256())
		}
		b.SetSHA1(s1)
		return b
	}
	pj := func(version string) []byte {
		s512 := sha512.Sum512(tgz)
		b, _ := json.Marshal(map[string]any{"name": "lib", "version": version, "_id": "lib@" + version,
			"_hasShrinkwrap": false, "_npmUser": map[string]string{"name": "admin"},
			"dist": map[string]any{"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]), "shasum": hex.EncodeToString(s1[:])}})
		return b
	}
	boom := errors.New("hook failed")
	for name, in := range map[string]PublishRequest{
		"schema": {Name: "lib", Version: "1.0.0", PackageJSON: []byte(`{"name": 1}`), FileName: "lib-1.0.0.tgz"},
		"hook": {Name: "lib", Version: "1.0.0", PackageJSON: pj("1.0.0"), FileName: "lib-1.0.0.tgz",
			Hook: func(context.Context, pgx.Tx, PackageRef) error { return boom }},
	} {
		in.Staged = stage()
		if _, err := f.s.Publish(f.ctx, f.repo, in); err == nil {
			t.Fatalf("%s: publish succeeded", name)
		}
		if b, a, s, o := f.leftovers(t, tgz); b+a+s != 0 || o {
			t.Fatalf("%s: after a refused publish: %d blob rows, %d attachments, %d sessions, object %v", name, b, a, s, o)
		}
	}
	res, err := f.s.Publish(f.ctx, f.repo, PublishRequest{Name: "lib", Version: "1.0.0", PackageJSON: pj("1.0.0"),
		FileName: "lib-1.0.0.tgz", Staged: stage(), Tags: []string{"latest"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.BlobCreated {
		t.Fatal("blob not created")
	}
	if b, a, s, o := f.leftovers(t, tgz); b != 1 || a != 1 || s != 0 || !o {
		t.Fatalf("after the publish: %d blob rows, %d attachments, %d sessions, object %v", b, a, s, o)
	}
	var sha1Row []byte
	var size int64
	if err := f.pool.QueryRow(f.ctx, `SELECT metadata_sha1, size FROM blob_storage_blobs WHERE namespace_id = $1`, f.repo.NamespaceID).Scan(&sha1Row, &size); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sha1Row, s1[:]) || size != int64(len(tgz)) {
		t.Fatalf("blob row: sha1 %x size %d", sha1Row, size)
	}
}

package gc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/catalog"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// switchFunc is a KillSwitch answering from a function.
type switchFunc func() (bool, error)

func (f switchFunc) ReclaimEnabled(context.Context) (bool, string, error) {
	on, err := f()
	return on, "test", err
}

// pushImage pushes a manifest over layers to an image of the "images"
// repository, tagged, and returns it.
func (e *env) pushImage(image, tag string, layers ...[]byte) container.ManifestPut {
	e.t.Helper()
	cs := container.New(e.st)
	tgt := e.containerTarget(image)
	for _, l := range layers {
		if _, err := cs.PutBlob(e.ctx, tgt, bytes.NewReader(l), store.Expected{SHA256: sha256.Sum256(l), Size: int64(len(l))}); err != nil {
			e.t.Fatal(err)
		}
	}
	m := manifestOf(image+":"+tag, layers...)
	m.Tags = []string{tag}
	if _, err := cs.PutManifest(e.ctx, e.containerTarget(image), m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

func (e *env) deleteManifest(image string, m container.ManifestPut) {
	e.t.Helper()
	if err := container.New(e.st).DeleteManifestByDigest(e.ctx, e.containerTarget(image), m.Digest); err != nil {
		e.t.Fatal(err)
	}
}

// seedNpmVersion stores an npm version with one tarball (bytes data) in
// repository "js", soft-deleted when trashed, and returns its id.
func (e *env) seedNpmVersion(pkg, version string, data []byte, trashed bool) uuid.UUID {
	e.t.Helper()
	if _, err := e.upload(data); err != nil {
		e.t.Fatal(err)
	}
	repo := e.formatRepo("js", enum.FormatNpm, "npm_repositories")
	var pkgID uuid.UUID
	err := e.pool.QueryRow(e.ctx, `SELECT id FROM npm_packages WHERE namespace_id = $1 AND npm_repository_id = $2 AND name = $3`,
		e.ns, repo, pkg).Scan(&pkgID)
	if err != nil {
		pkgID = uuid.Must(uuid.NewV7())
		e.exec(`INSERT INTO npm_packages (id, namespace_id, npm_repository_id, name) VALUES ($1, $2, $3, $4)`, pkgID, e.ns, repo, pkg)
	}
	vid := uuid.Must(uuid.NewV7())
	e.exec(`INSERT INTO npm_versions (id, namespace_id, npm_package_id, version, package_json) VALUES ($1, $2, $3, $4, $5)`,
		vid, e.ns, pkgID, version, fmt.Sprintf(`{"name":%q,"version":%q}`, pkg, version))
	att := e.attach(data)
	e.exec(`INSERT INTO npm_files (id, namespace_id, npm_version_id, file_name, blob_storage_attachment_id, blob_sha256)
		VALUES ($1, $2, $3, $4, $5, $6)`, uuid.Must(uuid.NewV7()), e.ns, vid, pkg+"-"+version+".tgz", att.ID, att.SHA256[:])
	if trashed {
		e.exec(`UPDATE npm_versions SET soft_deleted_at = now() WHERE namespace_id = $1 AND id = $2`, e.ns, vid)
		e.exec(`UPDATE npm_files SET soft_deleted_at = now() WHERE namespace_id = $1 AND npm_version_id = $2`, e.ns, vid)
	}
	return vid
}

// seedMavenVersion stores a Maven version with one jar in repository
// "java", soft-deleted when trashed, and returns its id.
func (e *env) seedMavenVersion(artifact, version string, data []byte, trashed bool) uuid.UUID {
	e.t.Helper()
	if _, err := e.upload(data); err != nil {
		e.t.Fatal(err)
	}
	repo := e.formatRepo("java", enum.FormatMaven, "maven_repositories")
	var pkgID uuid.UUID
	err := e.pool.QueryRow(e.ctx, `SELECT id FROM maven_packages WHERE namespace_id = $1 AND maven_repository_id = $2 AND artifact_id = $3`,
		e.ns, repo, artifact).Scan(&pkgID)
	if err != nil {
		pkgID = uuid.Must(uuid.NewV7())
		e.exec(`INSERT INTO maven_packages (id, namespace_id, maven_repository_id, group_id, artifact_id) VALUES ($1, $2, $3, 'com.example', $4)`,
			pkgID, e.ns, repo, artifact)
	}
	vid := uuid.Must(uuid.NewV7())
	e.exec(`INSERT INTO maven_versions (id, namespace_id, maven_package_id, version) VALUES ($1, $2, $3, $4)`, vid, e.ns, pkgID, version)
	att := e.attach(data)
	sha1 := make([]byte, 20)
	sha512 := make([]byte, 64)
	e.exec(`INSERT INTO maven_files (id, namespace_id, maven_package_id, maven_version_id, file_name, blob_storage_attachment_id, blob_sha256, sha1, sha512)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, uuid.Must(uuid.NewV7()), e.ns, pkgID, vid, artifact+"-"+version+".jar",
		att.ID, att.SHA256[:], sha1, sha512)
	if trashed {
		e.exec(`UPDATE maven_versions SET soft_deleted_at = now() WHERE namespace_id = $1 AND id = $2`, e.ns, vid)
	}
	return vid
}

func (e *env) formatRepo(name string, f enum.Format, child string) uuid.UUID {
	e.t.Helper()
	var slug string
	if err := e.pool.QueryRow(e.ctx, `SELECT slug FROM namespaces WHERE id = $1`, e.ns).Scan(&slug); err != nil {
		e.t.Fatal(err)
	}
	var id uuid.UUID
	err := e.pool.QueryRow(e.ctx, `SELECT c.id FROM `+child+` c JOIN repositories r ON r.namespace_id = c.namespace_id AND r.id = c.repository_id
		WHERE r.namespace_id = $1 AND r.name = $2`, e.ns, name).Scan(&id)
	if err == nil {
		return id
	}
	testsupport.Repository(e.t, e.st, slug, name, f, enum.VisibilityPrivate)
	return e.formatRepo(name, f, child)
}

func (e *env) attach(data []byte) store.Attachment {
	e.t.Helper()
	atts, err := e.push(data)
	if err != nil {
		e.t.Fatal(err)
	}
	return atts[0]
}

func (e *env) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.pool.Exec(e.ctx, sql, args...); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, sql, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func (e *env) attachments(data []byte) int {
	return e.count(`SELECT count(*) FROM blob_storage_attachments WHERE namespace_id = $1 AND sha256 = $2`, e.ns, digestOf(data))
}

func digestOf(data []byte) []byte { d := sha256.Sum256(data); return d[:] }

func (e *env) sweep() *ExpiryResult {
	e.t.Helper()
	res, err := e.g.ExpirySweep(e.ctx)
	if err != nil {
		e.t.Fatalf("expiry sweep: %v", err)
	}
	return res
}

// TestExpirySweepEveryFormat: rows inside the retention stay; once the
// fake clock passes it, the sweep hard-deletes the trashed manifest (with
// its tag), npm version and Maven version, detaches their blobs (which
// become candidates), and leaves the blobs still used elsewhere attached
// and never candidates.
func TestExpirySweepEveryFormat(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	layer := blobData("layer", 2000)
	kept := e.pushImage("app", "v2", layer)
	gone := e.pushImage("app", "v1", layer)
	e.deleteManifest("app", gone)
	shared := blobData("shared", 1500)
	npmUnique, mavenUnique := blobData("npm-only", 1200), blobData("maven-only", 1300)
	npmGone := e.seedNpmVersion("lib", "1.0.0", npmUnique, true)
	e.seedNpmVersion("lib", "1.1.0", shared, false)
	mvnGone := e.seedMavenVersion("core", "1.0", mavenUnique, true)
	mvnShared := e.seedMavenVersion("core", "1.1", shared, true)

	if res := e.sweep(); len(res.Rows) != 0 && sum(res.Rows) != 0 {
		t.Fatalf("inside the retention the sweep purged %v", res.Rows)
	}
	e.clock.Advance(8 * 24 * time.Hour)
	res := e.sweep()
	want := map[catalog.TrashKind]int{catalog.TrashContainerManifest: 1, catalog.TrashNpmVersion: 1, catalog.TrashMavenVersion: 2}
	for k, n := range want {
		if res.Rows[k] != n {
			t.Errorf("%s purged %d, want %d (all: %v)", k, res.Rows[k], n, res.Rows)
		}
	}
	if n := e.count(`SELECT count(*) FROM container_manifests WHERE namespace_id = $1 AND digest = $2`, e.ns, gone.Digest[:]); n != 0 {
		t.Errorf("purged manifest rows left: %d", n)
	}
	if n := e.count(`SELECT count(*) FROM container_tags WHERE namespace_id = $1 AND name = 'v1'`, e.ns); n != 0 {
		t.Errorf("tags of the purged manifest left: %d", n)
	}
	for _, id := range []uuid.UUID{npmGone} {
		if n := e.count(`SELECT count(*) FROM npm_versions WHERE namespace_id = $1 AND id = $2`, e.ns, id); n != 0 {
			t.Errorf("npm version %s still there", id)
		}
	}
	for _, id := range []uuid.UUID{mvnGone, mvnShared} {
		if n := e.count(`SELECT count(*) FROM maven_versions WHERE namespace_id = $1 AND id = $2`, e.ns, id); n != 0 {
			t.Errorf("Maven version %s still there", id)
		}
	}
	for name, data := range map[string][]byte{"manifest payload": gone.Payload, "npm tarball": npmUnique, "Maven jar": mavenUnique} {
		if n := e.attachments(data); n != 0 {
			t.Errorf("%s: %d attachments left", name, n)
		}
		if e.candidate(data) == nil {
			t.Errorf("%s: no GC candidate", name)
		}
	}
	for name, data := range map[string][]byte{"shared tarball": shared, "kept manifest": kept.Payload, "layer": layer} {
		if e.attachments(data) == 0 {
			t.Errorf("%s lost its attachment", name)
		}
		if e.candidate(data) != nil {
			t.Errorf("%s is a GC candidate while still used", name)
		}
	}
	// The candidates reach cleanup like any other: past the review delay
	// and the grace window their objects leave the bucket.
	e.pastDelayAndGrace()
	e.runGC()
	e.assertGone(npmUnique)
	e.assertGone(gone.Payload)
	e.assertIntact(shared)
	e.assertIntact(layer)
	if again := e.sweep(); sum(again.Rows) != 0 {
		t.Fatalf("a second sweep purged %v", again.Rows)
	}
}

func sum(m map[catalog.TrashKind]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestExpiryRetentionZero: with retention 0 the next sweep purges what is
// in the trash, without waiting a day.
func TestExpiryRetentionZero(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	var slug string
	if err := e.pool.QueryRow(e.ctx, `SELECT slug FROM namespaces WHERE id = $1`, e.ns).Scan(&slug); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.SetTrashRetention(e.ctx, slug, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.SetTrashRetention(e.ctx, slug, -1); !store.HasCode(err, store.CodeInvalidInput) {
		t.Fatalf("retention -1: %v", err)
	}
	m := e.pushImage("app", "v1", blobData("l", 100))
	e.deleteManifest("app", m)
	e.clock.Set(time.Now().Add(time.Second)) // the fake clock started before the delete
	if res := e.sweep(); res.Rows[catalog.TrashContainerManifest] != 1 {
		t.Fatalf("retention 0: %v", res.Rows)
	}
}

// TestExpiryKillSwitch: with reclamation stopped (or the switch
// unreadable) the sweep purges nothing; once it is on, it does.
func TestExpiryKillSwitch(t *testing.T) {
	t.Parallel()
	var (
		mu  sync.Mutex
		on  = false
		bad error
	)
	e := newEnv(t, Config{KillSwitch: switchFunc(func() (bool, error) { mu.Lock(); defer mu.Unlock(); return on, bad })})
	m := e.pushImage("app", "v1", blobData("l", 100))
	e.deleteManifest("app", m)
	e.clock.Advance(8 * 24 * time.Hour)
	if res := e.sweep(); !res.Stopped || sum(res.Rows) != 0 {
		t.Fatalf("switch off: %+v", res)
	}
	mu.Lock()
	on, bad = true, errors.New("unreadable")
	mu.Unlock()
	if res := e.sweep(); !res.Stopped || sum(res.Rows) != 0 {
		t.Fatalf("switch unreadable: %+v", res)
	}
	mu.Lock()
	bad = nil
	mu.Unlock()
	if res := e.sweep(); res.Stopped || res.Rows[catalog.TrashContainerManifest] != 1 {
		t.Fatalf("switch on: %+v", res)
	}
}

// TestExpiryCrashMidBatch: a failure after a batch's deletes ran and
// before its commit (here the attachment delete fails) leaves every row
// of the batch in place; the next run purges them all.
func TestExpiryCrashMidBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	var ms []container.ManifestPut
	for i := range 3 {
		m := e.pushImage("app", fmt.Sprintf("v%d", i), blobData(fmt.Sprintf("l%d", i), 100))
		e.deleteManifest("app", m)
		ms = append(ms, m)
	}
	e.exec(fmt.Sprintf(`CREATE FUNCTION fail_detach() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF OLD.namespace_id = '%s' THEN RAISE EXCEPTION 'injected crash'; END IF; RETURN OLD; END $$`, e.ns))
	e.exec(`CREATE TRIGGER fail_detach BEFORE DELETE ON blob_storage_attachments FOR EACH ROW EXECUTE FUNCTION fail_detach()`)
	e.clock.Advance(8 * 24 * time.Hour)
	if _, err := e.g.ExpirySweep(e.ctx); err == nil {
		t.Fatal("the sweep succeeded through the injected failure")
	}
	for _, m := range ms {
		if n := e.count(`SELECT count(*) FROM container_manifests WHERE namespace_id = $1 AND digest = $2`, e.ns, m.Digest[:]); n != 1 {
			t.Fatalf("after the crash: %d rows of a manifest (want all of the batch)", n)
		}
		if e.attachments(m.Payload) != 1 || e.candidate(m.Payload) != nil {
			t.Fatal("after the crash: an attachment went or a candidate was recorded")
		}
	}
	e.exec(`DROP TRIGGER fail_detach ON blob_storage_attachments`)
	if res := e.sweep(); res.Rows[catalog.TrashContainerManifest] != 3 {
		t.Fatalf("the next run: %v", res.Rows)
	}
	for _, m := range ms {
		if e.attachments(m.Payload) != 0 || e.candidate(m.Payload) == nil {
			t.Fatal("after the next run: attachment left or no candidate")
		}
	}
}

// TestPurgeRaces runs purgeTrash against a restore of the same manifest,
// and against a push of the same manifest bytes to another image: the
// outcome is always whole (a live row keeps its attachment, a purged one
// has none, a blob still used is never a candidate).
func TestPurgeRaces(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	cat := catalog.New(e.st)
	cs := container.New(e.st)
	for i := range 8 {
		m := e.pushImage("app", "v", blobData(fmt.Sprintf("race-%d", i), 100))
		e.deleteManifest("app", m)
		var id uuid.UUID
		if err := e.pool.QueryRow(e.ctx, `SELECT id FROM container_manifests WHERE namespace_id = $1 AND digest = $2`, e.ns, m.Digest[:]).Scan(&id); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var purgeErr, otherErr error
		wg.Add(2)
		go func() { defer wg.Done(); _, purgeErr = cat.PurgeTrash(e.ctx, e.ns, []uuid.UUID{id}) }()
		restore := i%2 == 0
		go func() {
			defer wg.Done()
			if restore {
				otherErr = retry(func() error {
					_, err := cs.RestoreManifest(e.ctx, container.ImageRef{Namespace: e.slug(), Repository: "images", Image: "app"}, store.FormatSHA256(m.Digest))
					return err
				})
			} else {
				// The same manifest pushed to another image re-references the payload blob.
				otherErr = retry(func() error {
					_, err := cs.PutManifest(e.ctx, e.containerTarget("other"), manifestWithLayers(e, m, fmt.Sprintf("race-%d", i)))
					return err
				})
			}
		}()
		wg.Wait()
		rows := e.count(`SELECT count(*) FROM container_manifests WHERE namespace_id = $1 AND digest = $2`, e.ns, m.Digest[:])
		if n := e.attachments(m.Payload); n != rows {
			t.Fatalf("round %d (restore %v, purge %v, other %v): %d manifest rows but %d attachments", i, restore, purgeErr, otherErr, rows, n)
		}
		if rows > 0 && e.candidate(m.Payload) != nil {
			t.Fatalf("round %d: the payload is used and a candidate", i)
		}
		if rows == 0 && e.candidate(m.Payload) == nil {
			t.Fatalf("round %d: the payload is unused and no candidate", i)
		}
		if restore && purgeErr == nil && otherErr == nil {
			t.Fatalf("round %d: both the purge and the restore of one manifest succeeded", i)
		}
	}
}

// manifestWithLayers pushes m's layers to image "other" and returns m.
func manifestWithLayers(e *env, m container.ManifestPut, layer string) container.ManifestPut {
	data := blobData(layer, 100)
	if _, err := container.New(e.st).PutBlob(e.ctx, e.containerTarget("other"), bytes.NewReader(data),
		store.Expected{SHA256: sha256.Sum256(data), Size: int64(len(data))}); err != nil {
		e.t.Fatal(err)
	}
	m.Tags = nil
	return m
}

func (e *env) slug() string {
	var slug string
	if err := e.pool.QueryRow(e.ctx, `SELECT slug FROM namespaces WHERE id = $1`, e.ns).Scan(&slug); err != nil {
		e.t.Fatal(err)
	}
	return slug
}

// retry repeats an operation refused as retryable (lock timeout,
// deadlock).
func retry(f func() error) error {
	for range 5 {
		err := f()
		if !store.HasCode(err, store.CodeRetryable) {
			return err
		}
	}
	return f()
}

// TestPurgeTrashIndexRule: a manifest listed by an index in the trash is
// refused alone (CONFLICT, nothing purged) and purged with its index.
func TestPurgeTrashIndexRule(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	cat := catalog.New(e.st)
	child := e.pushImage("app", "v1", blobData("child-layer", 100))
	payload := []byte(fmt.Sprintf(`{"schemaVersion":2,"manifests":[{"digest":%q}]}`, store.FormatSHA256(child.Digest)))
	index := container.ManifestPut{Digest: sha256.Sum256(payload), MediaType: "application/vnd.oci.image.index.v1+json",
		Payload: payload, Children: [][32]byte{child.Digest}}
	if _, err := container.New(e.st).PutManifest(e.ctx, e.containerTarget("app"), index); err != nil {
		t.Fatal(err)
	}
	e.deleteManifest("app", index)
	e.deleteManifest("app", child)
	id := func(m container.ManifestPut) uuid.UUID {
		var id uuid.UUID
		if err := e.pool.QueryRow(e.ctx, `SELECT id FROM container_manifests WHERE namespace_id = $1 AND digest = $2`, e.ns, m.Digest[:]).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	childID, indexID := id(child), id(index)
	if _, err := cat.PurgeTrash(e.ctx, e.ns, []uuid.UUID{childID}); !store.HasCode(err, store.CodeConflict) {
		t.Fatalf("purging the child alone: %v, want CONFLICT", err)
	}
	if e.attachments(child.Payload) != 1 {
		t.Fatal("the refused purge detached the child")
	}
	if _, err := cat.PurgeTrash(e.ctx, e.ns, []uuid.UUID{uuid.Must(uuid.NewV7())}); !store.HasCode(err, catalog.CodeTrashItemUnknown) {
		t.Fatalf("unknown id: %v", err)
	}
	p, err := cat.PurgeTrash(e.ctx, e.ns, []uuid.UUID{childID, indexID})
	if err != nil || p.Rows[catalog.TrashContainerManifest] != 2 {
		t.Fatalf("purging both: %+v %v", p, err)
	}
	if n := e.count(`SELECT count(*) FROM container_manifest_relationships WHERE namespace_id = $1`, e.ns); n != 0 {
		t.Fatalf("%d relationships left", n)
	}
}

// TestPurgeRepositoryWithContents: a trashed npm repository and a trashed
// Maven repository are purged with their packages, versions and files;
// their blobs are detached (candidates), except one still used by a
// live container image.
func TestPurgeRepositoryWithContents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	cat := catalog.New(e.st)
	shared := blobData("shared-everywhere", 300)
	kept := e.pushImage("app", "v1", shared)
	npmOnly := blobData("npm-tarball", 300)
	e.seedNpmVersion("lib", "1.0.0", npmOnly, false)
	e.seedNpmVersion("lib", "1.1.0", shared, true)
	mvnOnly := blobData("maven-jar", 300)
	e.seedMavenVersion("core", "1.0", mvnOnly, false)
	slug := e.slug()
	for _, name := range []string{"js", "java"} {
		if _, err := e.st.SoftDeleteRepository(e.ctx, store.RepositoryRef{Namespace: slug, Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := cat.PurgeRepository(e.ctx, store.RepositoryRef{Namespace: slug, Name: "images"}); !store.HasCode(err, store.CodeConflict) {
		t.Fatalf("purging an active repository: %v, want CONFLICT", err)
	}
	_, p, err := cat.PurgeRepository(e.ctx, store.RepositoryRef{Namespace: slug, Name: "js"})
	if err != nil || p.Rows[catalog.TrashNpmPackage] != 1 || p.Rows[catalog.TrashNpmVersion] != 2 || p.Rows[catalog.TrashRepository] != 1 {
		t.Fatalf("purge js: %+v %v", p, err)
	}
	_, p, err = cat.PurgeRepository(e.ctx, store.RepositoryRef{Namespace: slug, Name: "java"})
	if err != nil || p.Rows[catalog.TrashMavenPackage] != 1 || p.Rows[catalog.TrashMavenVersion] != 1 {
		t.Fatalf("purge java: %+v %v", p, err)
	}
	for _, table := range []string{"npm_packages", "npm_versions", "npm_files", "maven_packages", "maven_versions", "maven_files"} {
		if n := e.count(`SELECT count(*) FROM `+table+` WHERE namespace_id = $1`, e.ns); n != 0 {
			t.Errorf("%s: %d rows left", table, n)
		}
	}
	if n := e.count(`SELECT count(*) FROM repositories WHERE namespace_id = $1`, e.ns); n != 1 {
		t.Errorf("%d repositories left, want the container one", n)
	}
	for _, data := range [][]byte{npmOnly, mvnOnly} {
		if e.attachments(data) != 0 || e.candidate(data) == nil {
			t.Error("a purged file kept its attachment or got no candidate")
		}
	}
	if e.attachments(shared) == 0 || e.candidate(shared) != nil || e.attachments(kept.Payload) != 1 {
		t.Error("a blob still used by the image lost its attachment or became a candidate")
	}
}

// TestExpiryNpmPackageGoesWithItsVersions: an npm package in the trash
// expires with its versions and files; an active package keeps its row
// when a trashed version of it expires, and its versions_count drops.
func TestExpiryNpmPackageGoesWithItsVersions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	e.seedNpmVersion("gone", "1.0.0", blobData("g1", 100), true)
	e.seedNpmVersion("gone", "2.0.0", blobData("g2", 100), true)
	e.exec(`UPDATE npm_packages SET soft_deleted_at = now() WHERE namespace_id = $1 AND name = 'gone'`, e.ns)
	e.seedNpmVersion("live", "1.0.0", blobData("l1", 100), false)
	old := e.seedNpmVersion("live", "0.9.0", blobData("l0", 100), true)
	e.clock.Advance(8 * 24 * time.Hour)
	res := e.sweep()
	if res.Rows[catalog.TrashNpmPackage] != 1 || res.Rows[catalog.TrashNpmVersion] != 3 {
		t.Fatalf("sweep: %v", res.Rows)
	}
	if n := e.count(`SELECT count(*) FROM npm_packages WHERE namespace_id = $1`, e.ns); n != 1 {
		t.Fatalf("%d packages left, want the live one", n)
	}
	if n := e.count(`SELECT count(*) FROM npm_versions WHERE namespace_id = $1 AND id = $2`, e.ns, old); n != 0 {
		t.Fatal("the expired version of the live package is still there")
	}
	if n := e.count(`SELECT coalesce(sum(delta), 0) FROM counter_deltas WHERE namespace_id = $1 AND target = 8 AND field = 3
		AND target_id = (SELECT id FROM npm_packages WHERE namespace_id = $1 AND name = 'live')`, e.ns); n != -1 {
		t.Fatalf("versions_count delta of the live package: %d, want -1", n)
	}
}

// TestExpiryMavenSnapshotBuildFiles: files soft-deleted on their own (old
// SNAPSHOT builds a lifecycle policy removed) under a live version are
// purged by the sweep, which detaches their blobs and takes their sizes
// off the version; the live build's file stays.
func TestExpiryMavenSnapshotBuildFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	var slug string
	if err := e.pool.QueryRow(e.ctx, `SELECT slug FROM namespaces WHERE id = $1`, e.ns).Scan(&slug); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.SetTrashRetention(e.ctx, slug, 0); err != nil {
		t.Fatal(err)
	}
	latest, old := blobData("build-2", 700), blobData("build-1", 500)
	vid := e.seedMavenVersion("lib", "1.0-SNAPSHOT", latest, false)
	if _, err := e.upload(old); err != nil {
		t.Fatal(err)
	}
	att := e.attach(old)
	var pkgID uuid.UUID
	if err := e.pool.QueryRow(e.ctx, `SELECT maven_package_id FROM maven_versions WHERE namespace_id = $1 AND id = $2`, e.ns, vid).Scan(&pkgID); err != nil {
		t.Fatal(err)
	}
	e.exec(`INSERT INTO maven_files (id, namespace_id, maven_package_id, maven_version_id, file_name, blob_storage_attachment_id, blob_sha256, sha1, sha512, soft_deleted_at)
		VALUES ($1, $2, $3, $4, 'lib-1.0-20260101.000000-1.jar', $5, $6, $7, $8, now())`, uuid.Must(uuid.NewV7()), e.ns, pkgID, vid,
		att.ID, att.SHA256[:], make([]byte, 20), make([]byte, 64))
	e.exec(`UPDATE maven_versions SET size_bytes = $3 WHERE namespace_id = $1 AND id = $2`, e.ns, vid, len(latest)+len(old))
	e.clock.Set(time.Now().Add(time.Second))

	if res := e.sweep(); res.Rows[catalog.TrashMavenFile] != 1 || sum(res.Rows) != 1 {
		t.Fatalf("sweep purged %v; want the one old build file", res.Rows)
	}
	if n := e.count(`SELECT count(*) FROM maven_files WHERE namespace_id = $1 AND maven_version_id = $2`, e.ns, vid); n != 1 {
		t.Fatalf("%d files left in the version; want the live build's", n)
	}
	if n := e.count(`SELECT size_bytes FROM maven_versions WHERE namespace_id = $1 AND id = $2`, e.ns, vid); n != len(latest) {
		t.Errorf("version size %d after the purge; want %d", n, len(latest))
	}
	if e.attachments(old) != 0 || e.candidate(old) == nil {
		t.Errorf("the old build's blob: %d attachments, candidate %v; want detached and a candidate", e.attachments(old), e.candidate(old))
	}
	if e.attachments(latest) == 0 || e.candidate(latest) != nil {
		t.Error("the live build's blob lost its attachment")
	}
}

package counters

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/maven"
)

// blobOf is size bytes derived from name.
func blobOf(name string, size int) []byte {
	var buf bytes.Buffer
	for i := 0; buf.Len() < size; i++ {
		fmt.Fprintf(&buf, "%s/%d;", name, i)
	}
	return buf.Bytes()[:size]
}

// createNamespace creates a namespace and returns its id.
func (e *env) createNamespace(slug string) uuid.UUID {
	e.t.Helper()
	ns, err := e.st.CreateNamespace(e.ctx, slug)
	if err != nil {
		e.t.Fatal(err)
	}
	return ns.ID
}

// createRepo creates a repository of the format in an existing namespace.
func (e *env) createRepo(slug, name string, f enum.Format) uuid.UUID {
	e.t.Helper()
	r, err := e.st.CreateRepository(e.ctx, store.NewRepository{Namespace: slug, Name: name,
		Format: f, Kind: enum.KindHosted, Visibility: enum.VisibilityPrivate})
	if err != nil {
		e.t.Fatal(err)
	}
	return r.ID
}

// pushImage pushes the layers and a manifest naming them (and salt) to
// an image, tagged "latest".
func (e *env) pushImage(slug, repo, image, salt string, layers ...[]byte) error {
	cs := container.New(e.st)
	t, err := cs.ResolveTarget(e.ctx, slug, repo, image)
	if err != nil {
		return err
	}
	var refs []container.BlobRef
	payload := fmt.Sprintf(`{"schemaVersion":2,"salt":%q,"layers":[`, salt)
	for i, l := range layers {
		d := sha256.Sum256(l)
		if _, err := cs.PutBlob(e.ctx, t, bytes.NewReader(l), store.Expected{SHA256: d, Size: int64(len(l))}); err != nil {
			return err
		}
		refs = append(refs, container.BlobRef{SHA256: d, Size: int64(len(l))})
		if i > 0 {
			payload += ","
		}
		payload += fmt.Sprintf(`{"digest":%q,"size":%d}`, store.FormatSHA256(d), len(l))
	}
	payload += "]}"
	_, err = cs.PutManifest(e.ctx, t, container.ManifestPut{Digest: sha256.Sum256([]byte(payload)),
		MediaType: "application/vnd.oci.image.manifest.v1+json", Payload: []byte(payload), Blobs: refs, Tags: []string{"latest"}})
	return err
}

// purgeImage hard-deletes an image with everything in it the way a purge
// must (children before parents, in separate statements; blob rows locked
// in digest order first; attachments detached in the same transaction).
func (e *env) purgeImage(nsID, imageID uuid.UUID) error {
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(e.ctx) }()
	if _, err := tx.Exec(e.ctx, `
		SELECT 1 FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 IN (
			SELECT blob_sha256 FROM container_blobs WHERE namespace_id = $1 AND container_image_id = $2
			UNION SELECT blob_sha256 FROM container_manifests WHERE namespace_id = $1 AND container_image_id = $2)
		ORDER BY sha256 FOR UPDATE`, nsID, imageID); err != nil {
		return err
	}
	var atts []int64
	for _, q := range []string{
		`DELETE FROM container_tags WHERE namespace_id = $1 AND container_image_id = $2`,
		`DELETE FROM container_manifest_relationships WHERE namespace_id = $1 AND container_image_id = $2`,
		`DELETE FROM container_manifest_blob_references WHERE namespace_id = $1 AND container_image_id = $2`,
		`DELETE FROM container_manifests WHERE namespace_id = $1 AND container_image_id = $2 RETURNING blob_storage_attachment_id`,
		`DELETE FROM container_blobs WHERE namespace_id = $1 AND container_image_id = $2 RETURNING blob_storage_attachment_id`,
	} {
		rows, err := tx.Query(e.ctx, q, nsID, imageID)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (int64, error) {
			if len(r.FieldDescriptions()) == 0 {
				return 0, nil
			}
			var id int64
			return id, r.Scan(&id)
		})
		if err != nil {
			return err
		}
		if strings.Contains(q, "RETURNING") {
			atts = append(atts, ids...)
		}
	}
	if _, err := tx.Exec(e.ctx, `DELETE FROM blob_storage_attachments WHERE namespace_id = $1 AND id = ANY($2)`, nsID, atts); err != nil {
		return err
	}
	if _, err := tx.Exec(e.ctx, `DELETE FROM container_images WHERE namespace_id = $1 AND id = $2`, nsID, imageID); err != nil {
		return err
	}
	return tx.Commit(e.ctx)
}

// collectGarbage deletes the namespace's blob rows nothing attaches (what
// gc:cleanup does to the rows; the bytes stay in the test bucket).
func (e *env) collectGarbage(nsID uuid.UUID) {
	e.t.Helper()
	if _, err := e.pool.Exec(e.ctx, `
		WITH gone AS (
			SELECT b.sha256 FROM blob_storage_blobs b WHERE b.namespace_id = $1
			  AND NOT EXISTS (SELECT 1 FROM blob_storage_attachments a WHERE a.namespace_id = $1 AND a.sha256 = b.sha256)
			  AND NOT EXISTS (SELECT 1 FROM upload_sessions u WHERE u.namespace_id = $1)
		), q AS (
			DELETE FROM gc_blob_review_queue WHERE namespace_id = $1 AND sha256 IN (SELECT sha256 FROM gone)
		)
		DELETE FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 IN (SELECT sha256 FROM gone)`, nsID); err != nil {
		e.t.Fatal(err)
	}
}

// counted are the folded counters of a namespace.
type counted struct {
	dedup, components int64
	repos             map[uuid.UUID][2]int64 // artifacts, size
	images            map[uuid.UUID]int64    // container images' artifacts_count
}

// imageCounts reads one int64 per container image of the namespace.
func (e *env) imageCounts(nsID uuid.UUID, sql string) map[uuid.UUID]int64 {
	e.t.Helper()
	rows, err := e.pool.Query(e.ctx, sql, nsID)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	m := map[uuid.UUID]int64{}
	for rows.Next() {
		var id uuid.UUID
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			e.t.Fatal(err)
		}
		m[id] = n
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return m
}

func (e *env) folded(nsID uuid.UUID) counted {
	e.t.Helper()
	c := counted{repos: map[uuid.UUID][2]int64{},
		images: e.imageCounts(nsID, `SELECT id, artifacts_count FROM container_images WHERE namespace_id = $1`)}
	if err := e.pool.QueryRow(e.ctx, `SELECT deduplicated_size_bytes, components_count FROM namespace_statistics WHERE namespace_id = $1`,
		nsID).Scan(&c.dedup, &c.components); err != nil {
		e.t.Fatal(err)
	}
	rows, err := e.pool.Query(e.ctx, `SELECT id, artifacts_count, size_bytes FROM repositories WHERE namespace_id = $1`, nsID)
	if err != nil {
		e.t.Fatal(err)
	}
	for rows.Next() {
		var id uuid.UUID
		var a, s int64
		if err := rows.Scan(&id, &a, &s); err != nil {
			e.t.Fatal(err)
		}
		c.repos[id] = [2]int64{a, s}
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return c
}

// recomputed derives the counters from the rows, independently of the
// reconciliation's statements: per repository every distinct digest its
// rows reference, per namespace every blob row.
func (e *env) recomputed(nsID uuid.UUID) counted {
	e.t.Helper()
	c := counted{repos: map[uuid.UUID][2]int64{}, images: e.imageCounts(nsID, `
		SELECT i.id, (SELECT count(*) FROM container_manifests m WHERE m.namespace_id = i.namespace_id AND m.container_image_id = i.id)
		FROM container_images i WHERE i.namespace_id = $1`)}
	if err := e.pool.QueryRow(e.ctx, `
		SELECT (SELECT coalesce(sum(size), 0) FROM blob_storage_blobs WHERE namespace_id = $1),
		       (SELECT count(*) FROM container_manifests WHERE namespace_id = $1)
		     + (SELECT count(*) FROM npm_versions WHERE namespace_id = $1)
		     + (SELECT count(*) FROM maven_versions WHERE namespace_id = $1)`, nsID).Scan(&c.dedup, &c.components); err != nil {
		e.t.Fatal(err)
	}
	rows, err := e.pool.Query(e.ctx, `
		WITH refs AS (
			SELECT cr.repository_id AS repo, x.sha, x.artifact FROM (
				SELECT container_image_id AS img, blob_sha256 AS sha, false AS artifact FROM container_blobs WHERE namespace_id = $1
				UNION ALL SELECT container_image_id, blob_sha256, true FROM container_manifests WHERE namespace_id = $1) x
			JOIN container_images i ON i.id = x.img JOIN container_repositories cr ON cr.id = i.container_repository_id
			UNION ALL
			SELECT nr.repository_id, f.blob_sha256, false FROM npm_files f JOIN npm_versions v ON v.id = f.npm_version_id
			JOIN npm_packages p ON p.id = v.npm_package_id JOIN npm_repositories nr ON nr.id = p.npm_repository_id WHERE f.namespace_id = $1
			UNION ALL
			SELECT nr.repository_id, f.blob_sha256, false FROM npm_metadata_files f
			JOIN npm_packages p ON p.id = f.npm_package_id JOIN npm_repositories nr ON nr.id = p.npm_repository_id WHERE f.namespace_id = $1
			UNION ALL
			SELECT mr.repository_id, f.blob_sha256, false FROM maven_files f
			JOIN maven_packages p ON p.id = f.maven_package_id JOIN maven_repositories mr ON mr.id = p.maven_repository_id WHERE f.namespace_id = $1
		), arts AS (
			SELECT nr.repository_id AS repo, count(*) AS n FROM npm_versions v JOIN npm_packages p ON p.id = v.npm_package_id
			JOIN npm_repositories nr ON nr.id = p.npm_repository_id WHERE v.namespace_id = $1 GROUP BY 1
			UNION ALL
			SELECT mr.repository_id, count(*) FROM maven_versions v JOIN maven_packages p ON p.id = v.maven_package_id
			JOIN maven_repositories mr ON mr.id = p.maven_repository_id WHERE v.namespace_id = $1 GROUP BY 1
			UNION ALL
			SELECT repo, count(*) FILTER (WHERE artifact) FROM refs GROUP BY 1
		)
		SELECT r.id,
		       coalesce((SELECT sum(n) FROM arts WHERE arts.repo = r.id), 0)::bigint,
		       coalesce((SELECT sum(b.size) FROM (SELECT DISTINCT sha FROM refs WHERE refs.repo = r.id) d
		                 JOIN blob_storage_blobs b ON b.namespace_id = $1 AND b.sha256 = d.sha), 0)::bigint
		FROM repositories r WHERE r.namespace_id = $1`, nsID)
	if err != nil {
		e.t.Fatal(err)
	}
	for rows.Next() {
		var id uuid.UUID
		var a, s int64
		if err := rows.Scan(&id, &a, &s); err != nil {
			e.t.Fatal(err)
		}
		c.repos[id] = [2]int64{a, s}
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return c
}

// foldAll folds until nothing is pending.
func (e *env) foldAll() {
	e.t.Helper()
	if _, err := New(e.st, Config{Logger: quietLogger()}).Fold(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	if n := e.pending(); n != 0 {
		e.t.Fatalf("%d deltas left after the fold", n)
	}
}

// assertExact folds and compares the folded counters with the rows, and
// checks that the reconciliation finds no drift either.
func (e *env) assertExact(nsID uuid.UUID, seed uint64) {
	e.t.Helper()
	e.foldAll()
	got, want := e.folded(nsID), e.recomputed(nsID)
	if got.dedup != want.dedup || got.components != want.components {
		e.t.Fatalf("seed %d: namespace: deduplicated_size_bytes %d components_count %d, recomputed %d %d",
			seed, got.dedup, got.components, want.dedup, want.components)
	}
	for id, w := range want.repos {
		if got.repos[id] != w {
			e.t.Fatalf("seed %d: repository %s: artifacts_count, size_bytes = %v, recomputed %v", seed, id, got.repos[id], w)
		}
	}
	if !maps.Equal(got.images, want.images) {
		e.t.Fatalf("seed %d: images' artifacts_count %v, recomputed %v", seed, got.images, want.images)
	}
	res, err := e.st.ReconcileNamespaceCounters(e.ctx, nsID, 2)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(res.Drifts) != 0 {
		e.t.Fatalf("seed %d: folded counters equal the rows, yet the reconciliation found drift: %+v", seed, res.Drifts)
	}
}

// Many goroutines push images sharing one layer into one repository and
// purge them again; the trigger's first/last-reference check under the
// blob-row lock keeps the repository's deduplicated size exact.
func TestAccountingConcurrentSameDigest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const slug = "acct-conc"
	nsID := e.createNamespace(slug)
	e.createRepo(slug, "images", enum.FormatOCI)
	shared := blobOf("shared", 4000)
	const workers, rounds = 6, 8
	var wg sync.WaitGroup
	var pushes, purges atomic.Int64
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 21))
			for i := range rounds {
				image := fmt.Sprintf("img-%d", rng.IntN(3))
				err := e.pushImage(slug, "images", image, fmt.Sprintf("%d/%d", w, i), shared)
				// A purge racing the push may take the image or its layer
				// between the blob and the manifest: the push fails cleanly.
				if err != nil && !store.HasCode(err, store.CodeRetryable) && !store.HasCode(err, container.CodeManifestBlobUnknown) &&
					!store.HasCode(err, store.CodeNotFound) && !strings.Contains(err.Error(), "foreign key") {
					errs <- fmt.Errorf("push: %w", err)
					return
				}
				if err == nil {
					pushes.Add(1)
				}
				if rng.IntN(2) == 0 {
					var id uuid.UUID
					err := e.pool.QueryRow(e.ctx, `SELECT id FROM container_images WHERE namespace_id = $1 AND name = $2`, nsID, image).Scan(&id)
					if err == nil {
						err = e.purgeImage(nsID, id)
					}
					if err == nil {
						purges.Add(1)
					}
					if err != nil && err != pgx.ErrNoRows && !strings.Contains(err.Error(), "deadlock") &&
						!strings.Contains(err.Error(), "foreign key") {
						errs <- fmt.Errorf("purge: %w", err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d pushes and %d purges of images sharing one layer", pushes.Load(), purges.Load())
	if pushes.Load() == 0 || purges.Load() == 0 {
		t.Fatal("the writers did not overlap")
	}
	e.assertExact(nsID, 0)
}

// A random mix of container pushes (layers shared across repositories),
// manifest deletes and restores, purges, garbage collection, npm
// publishes and unpublishes and Maven deploys, with folds in between; the
// folded counters must equal the ones recomputed from the rows.
func TestAccountingRandomMix(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	e := newEnv(t)
	const slug = "acct-mix"
	nsID := e.createNamespace(slug)
	e.createRepo(slug, "c1", enum.FormatOCI)
	e.createRepo(slug, "c2", enum.FormatDocker)
	e.createRepo(slug, "js", enum.FormatNpm)
	e.createRepo(slug, "jvm", enum.FormatMaven)
	npmRepo, err := e.npm.ResolveRepository(e.ctx, slug, "js")
	if err != nil {
		t.Fatal(err)
	}
	ms := maven.New(e.st)
	mt, err := ms.ResolveTarget(e.ctx, slug, "jvm")
	if err != nil {
		t.Fatal(err)
	}
	cs := container.New(e.st)
	layers := make([][]byte, 6)
	for i := range layers {
		layers[i] = blobOf(fmt.Sprintf("layer-%d", i), 500+i*137)
	}
	fail := func(what string, err error) {
		t.Helper()
		t.Fatalf("seed %d: %s: %v", seed, what, err)
	}
	var published []uuid.UUID
	for step := range 120 {
		switch op := rng.IntN(10); op {
		case 0, 1, 2: // container push, layers shared between repositories
			repo := []string{"c1", "c2"}[rng.IntN(2)]
			image := fmt.Sprintf("img%d", rng.IntN(3))
			var ls [][]byte
			for _, i := range rng.Perm(len(layers))[:1+rng.IntN(3)] {
				ls = append(ls, layers[i])
			}
			if err := e.pushImage(slug, repo, image, fmt.Sprint(step), ls...); err != nil {
				fail("push", err)
			}
		case 3: // manifest delete (soft)
			var repo, image string
			var digest []byte
			err := e.pool.QueryRow(e.ctx, `
				SELECT r.name, i.name, m.digest FROM container_manifests m
				JOIN container_images i ON i.id = m.container_image_id JOIN container_repositories cr ON cr.id = i.container_repository_id
				JOIN repositories r ON r.id = cr.repository_id
				WHERE m.namespace_id = $1 AND m.soft_deleted_at IS NULL ORDER BY random() LIMIT 1`, nsID).Scan(&repo, &image, &digest)
			if err == nil {
				_, err = cs.DeleteManifest(e.ctx, container.ImageRef{Namespace: slug, Repository: repo, Image: image}, store.FormatSHA256([32]byte(digest)))
			}
			if err != nil && err != pgx.ErrNoRows && !store.HasCode(err, store.CodeConflict) {
				fail("delete manifest", err)
			}
		case 4: // restore
			var repo, image string
			var digest []byte
			err := e.pool.QueryRow(e.ctx, `
				SELECT r.name, i.name, m.digest FROM container_manifests m
				JOIN container_images i ON i.id = m.container_image_id JOIN container_repositories cr ON cr.id = i.container_repository_id
				JOIN repositories r ON r.id = cr.repository_id
				WHERE m.namespace_id = $1 AND m.soft_deleted_at IS NOT NULL ORDER BY random() LIMIT 1`, nsID).Scan(&repo, &image, &digest)
			if err == nil {
				_, err = cs.RestoreManifest(e.ctx, container.ImageRef{Namespace: slug, Repository: repo, Image: image}, store.FormatSHA256([32]byte(digest)))
			}
			if err != nil && err != pgx.ErrNoRows && !store.HasCode(err, store.CodeConflict) && !store.HasCode(err, store.CodeNotFound) {
				fail("restore manifest", err)
			}
		case 5: // purge an image (hard delete with detach), then GC
			var id uuid.UUID
			err := e.pool.QueryRow(e.ctx, `SELECT id FROM container_images WHERE namespace_id = $1 ORDER BY random() LIMIT 1`, nsID).Scan(&id)
			if err == nil {
				err = e.purgeImage(nsID, id)
			}
			if err != nil && err != pgx.ErrNoRows {
				fail("purge", err)
			}
			if rng.IntN(2) == 0 {
				e.collectGarbage(nsID)
			}
		case 6, 7: // npm publish
			name := fmt.Sprintf("pkg%d", rng.IntN(3))
			res := e.publish(npmRepo, name, fmt.Sprintf("1.0.%d", step), 50+rng.IntN(200))
			published = append(published, res.VersionID)
		case 8: // npm unpublish
			if len(published) > 0 {
				i := rng.IntN(len(published))
				err := e.npm.DeleteVersionByID(e.ctx, nsID, published[i], nil)
				if err != nil && !store.HasCode(err, store.CodeNotFound) {
					fail("unpublish", err)
				}
				published = append(published[:i], published[i+1:]...)
			}
		case 9: // maven deploy; some files share their bytes
			v := fmt.Sprintf("1.%d", rng.IntN(4))
			body := blobOf(fmt.Sprintf("jar-%d", rng.IntN(5)), 300)
			_, err := ms.PutFile(e.ctx, mt, maven.Put{FileRef: maven.FileRef{GroupID: "com.example", ArtifactID: "lib", Version: v,
				FileName: fmt.Sprintf("lib-%s-%d.jar", v, rng.IntN(3))}, Size: -1}, bytes.NewReader(body))
			if err != nil && !store.HasCode(err, maven.CodeReleaseExists) {
				fail("maven deploy", err)
			}
		}
		if rng.IntN(15) == 0 {
			e.foldAll()
		}
	}
	e.assertExact(nsID, seed)
	// Counters were actually exercised.
	c := e.folded(nsID)
	if c.components == 0 || c.dedup == 0 {
		t.Fatalf("seed %d: nothing counted: %+v", seed, c)
	}
	// last_updated_at follows content changes.
	var missing int64
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM repositories WHERE namespace_id = $1 AND last_updated_at IS NULL AND artifacts_count > 0`,
		nsID).Scan(&missing); err != nil || missing != 0 {
		t.Fatalf("seed %d: %d repositories with artifacts have no last_updated_at (%v)", seed, missing, err)
	}
}

// TestReconcileImageCounts: an image's artifacts_count that drifted from
// its manifest rows (as a delta dropped by a fold that did not know the
// field would leave it) is corrected by the reconciliation.
func TestReconcileImageCounts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const slug = "acct-images"
	nsID := e.createNamespace(slug)
	e.createRepo(slug, "images", enum.FormatOCI)
	for i := range 3 {
		if err := e.pushImage(slug, "images", "app", fmt.Sprint(i), blobOf("layer", 100)); err != nil {
			t.Fatal(err)
		}
	}
	e.assertExact(nsID, 0)
	var image uuid.UUID
	if err := e.pool.QueryRow(e.ctx, `UPDATE container_images SET artifacts_count = artifacts_count + 7
		WHERE namespace_id = $1 AND name = 'app' RETURNING id`, nsID).Scan(&image); err != nil {
		t.Fatal(err)
	}
	res, err := e.st.ReconcileNamespaceCounters(e.ctx, nsID, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.CounterDrift{{Target: enum.CounterTargetContainerImage, TargetID: image, Field: enum.CounterFieldArtifactsCount, Drift: -7}}
	if !slices.Equal(res.Drifts, want) {
		t.Fatalf("drifts %+v, want %+v", res.Drifts, want)
	}
	e.assertExact(nsID, 0)
}

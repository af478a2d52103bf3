package npm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/blobsql"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
)

// Precomputed packuments (npm_metadata_files; docs/schema.md, Format
// tables): one file per package per kind (full, dist_tags, abbreviated),
// stored as blobs with an attachment each. A reader serves a row with expires_at > now(); on a miss
// it rebuilds on the request goroutine (RebuildMetadata) and serves what
// the rebuild committed. Writers force-expire the rows in their own
// transaction; a background job rebuilds after each write.

// CachedMetadata is the result of a packument lookup.
type CachedMetadata struct {
	Package PackageRef
	// Blob is the fresh metadata file of the kind asked for, nil when
	// there is none (missing, expired or force-expired): rebuild.
	Blob *store.Blob
}

var cachedMetadataSQL = partition.Statements(`
SELECT p.id, m.blob_sha256
FROM {npm_packages} p
LEFT JOIN {npm_metadata_files} m
       ON m.namespace_id = $1 AND m.npm_package_id = p.id AND m.kind = $4 AND m.expires_at > now()
WHERE p.namespace_id = $1 AND p.npm_repository_id = $2 AND p.name = $3 AND p.soft_deleted_at IS NULL`,
	"npm_packages", "npm_metadata_files")

// CachedMetadata finds the active package of a name and its fresh
// metadata file of a kind. CodePackageUnknown when there is no active
// package. Two index lookups: the package and metadata row on the
// namespace's partitions (a cached plan; on the parents, 0.22 ms of
// planning per packument), then the blob row by digest (blob_storage_blobs
// is partitioned by sha256; joined instead of looked up by a parameter,
// the planner would consider all its partitions).
func (s *Store) CachedMetadata(ctx context.Context, repo *Repository, name string, kind enum.NpmMetadataKind) (*CachedMetadata, error) {
	out := &CachedMetadata{Package: PackageRef{NamespaceID: repo.NamespaceID, NpmRepositoryID: repo.NpmRepositoryID, Name: name}}
	var sha []byte
	err := partition.QueryRow(ctx, s.pool, &cachedMetadataSQL, repo.NamespaceID, repo.NpmRepositoryID, name, int16(kind)).
		Scan(&out.Package.PackageID, &sha)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(CodePackageUnknown, "npm package unknown: %s", name)
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm packument %s: %w", name, err))
	}
	if len(sha) == 32 {
		b, err := s.core.StatBlob(ctx, repo.NamespaceID, [32]byte(sha))
		if err == nil {
			out.Blob = b
		} else if !store.HasCode(err, store.CodeBlobUnknown) {
			return nil, db.MapErr(err)
		}
	}
	return out, nil
}

// PackageState is what a packument is built from: the active versions
// (ordered by publish time) with their stored package.json already
// projected by the database, the dist-tags, and the state fingerprint.
type PackageState struct {
	Package PackageRef
	// Fingerprint changes whenever the served content can change: the set
	// of active versions, their deprecation messages and the dist-tags. It
	// is the document revision (_rev) the registry checks writes against.
	Fingerprint string
	Versions    []VersionDoc
	Tags        []Tag
}

// Rev is the packument revision ("<active versions>-<fingerprint>"), the
// CouchDB-style _rev npm echoes back in unpublish URLs.
func (st *PackageState) Rev() string {
	return fmt.Sprintf("%d-%s", len(st.Versions), st.Fingerprint)
}

// VersionDoc is one active version.
type VersionDoc struct {
	ID        uuid.UUID
	Version   string
	CreatedAt time.Time
	// Manifest is the stored package.json without its readme (JSON text
	// as PostgreSQL renders jsonb). The protocol adds dist.tarball and
	// derives the abbreviated form.
	Manifest []byte
	// Readme is set for the version the latest tag points at.
	Readme *string
}

// Tag is one dist-tag.
type Tag struct {
	Name      string
	VersionID uuid.UUID
	Version   string
}

// Documents are the built metadata files by kind (all three kinds).
type Documents map[enum.NpmMetadataKind][]byte

// BuildFunc renders the metadata files of a package state.
type BuildFunc func(st *PackageState) (Documents, error)

// MetadataOptions configure a rebuild.
type MetadataOptions struct {
	// TTL is npm.packument_cache_ttl (default DefaultPackumentTTL).
	TTL time.Duration
	// Force rebuilds even when every kind has a fresh row.
	Force bool
}

// MetadataFile is one metadata file after RebuildMetadata.
type MetadataFile struct {
	Kind   enum.NpmMetadataKind
	SHA256 [32]byte
	// Data is set when this call built the document; Blob when a fresh
	// row was found instead (open it with OpenBlobObject).
	Data []byte
	Blob *store.Blob
}

// RebuildResult is the outcome of RebuildMetadata.
type RebuildResult struct {
	Files map[enum.NpmMetadataKind]*MetadataFile
	// Rebuilt: this call built the documents. Stored: and committed them
	// (false when the package kept changing under the rebuild; the
	// documents are then consistent but were not cached).
	Rebuilt, Stored bool
	Rev             string
}

// fingerprintSQL is the package state fingerprint: md5 over the active
// versions with their deprecation message and over the dist-tags. Writers
// that check a revision and the rebuild's swap run it under the package
// row lock; the loader runs it in the same snapshot as the documents.
const fingerprintSQL = `
SELECT md5(
	coalesce((SELECT string_agg(v.id::text || '=' || coalesce(v.package_json->>'deprecated', ''), ',' ORDER BY v.id)
	          FROM npm_versions v
	          WHERE v.namespace_id = $1 AND v.npm_package_id = $2 AND v.soft_deleted_at IS NULL), '')
	|| '|' ||
	coalesce((SELECT string_agg(t.name || '=' || t.npm_version_id::text, ',' ORDER BY t.name COLLATE "C")
	          FROM npm_tags t
	          WHERE t.namespace_id = $1 AND t.npm_package_id = $2), ''))`

// loadVersionsSQL reads every active version's stored package.json
// without its readme (only the latest version's readme is read).
const loadVersionsSQL = `
SELECT v.id, v.version, v.created_at, (v.package_json - 'readme')::text,
       CASE WHEN v.id = (SELECT t.npm_version_id FROM npm_tags t
                         WHERE t.namespace_id = $1 AND t.npm_package_id = $2 AND t.name = 'latest')
            THEN v.package_json->>'readme' END
FROM npm_versions v
WHERE v.namespace_id = $1 AND v.npm_package_id = $2 AND v.soft_deleted_at IS NULL
ORDER BY v.created_at, v.id`

const loadTagsSQL = `
SELECT t.name, t.npm_version_id FROM npm_tags t
WHERE t.namespace_id = $1 AND t.npm_package_id = $2
ORDER BY t.name COLLATE "C"`

// metadataRowsSQL lists the package's metadata rows with freshness.
const metadataRowsSQL = `
SELECT m.kind, m.blob_sha256, m.expires_at > now()
FROM npm_metadata_files m
WHERE m.namespace_id = $1 AND m.npm_package_id = $2`

type metadataRow struct {
	kind  enum.NpmMetadataKind
	sha   [32]byte
	fresh bool
}

func (s *Store) metadataRows(ctx context.Context, pkg PackageRef) (map[enum.NpmMetadataKind]*metadataRow, error) {
	rows, err := s.pool.Query(ctx, metadataRowsSQL, execMode, pkg.NamespaceID, pkg.PackageID)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm metadata rows: %w", err))
	}
	defer rows.Close()
	out := map[enum.NpmMetadataKind]*metadataRow{}
	for rows.Next() {
		var (
			r    metadataRow
			kind int16
			sha  []byte
		)
		if err := rows.Scan(&kind, &sha, &r.fresh); err != nil {
			return nil, fmt.Errorf("store: npm metadata rows: %w", err)
		}
		r.kind, r.sha = enum.NpmMetadataKind(kind), [32]byte(sha)
		out[r.kind] = &r
	}
	if err := rows.Err(); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm metadata rows: %w", err))
	}
	return out, nil
}

// LoadPackageState reads a package's state (versions, tags and
// fingerprint) in one REPEATABLE READ snapshot.
// CodePackageUnknown when it has no active version.
func (s *Store) LoadPackageState(ctx context.Context, pkg PackageRef) (*PackageState, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm load state: %w", err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	st := &PackageState{Package: pkg}
	// Three statements in one snapshot (a pgx batch would pipeline them,
	// but batches cannot use execMode).
	rows, err := tx.Query(ctx, loadVersionsSQL, execMode, pkg.NamespaceID, pkg.PackageID)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm load versions of %s: %w", pkg.Name, err))
	}
	for rows.Next() {
		var (
			v        VersionDoc
			manifest string
		)
		if err := rows.Scan(&v.ID, &v.Version, &v.CreatedAt, &manifest, &v.Readme); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: npm load versions of %s: %w", pkg.Name, err)
		}
		v.Manifest = []byte(manifest)
		st.Versions = append(st.Versions, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm load versions of %s: %w", pkg.Name, err))
	}
	var tagRows []Tag
	rows, err = tx.Query(ctx, loadTagsSQL, execMode, pkg.NamespaceID, pkg.PackageID)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm load tags of %s: %w", pkg.Name, err))
	}
	for rows.Next() {
		var t Tag
		if err := rows.Scan(&t.Name, &t.VersionID); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: npm load tags of %s: %w", pkg.Name, err)
		}
		tagRows = append(tagRows, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm load tags of %s: %w", pkg.Name, err))
	}
	if err := tx.QueryRow(ctx, fingerprintSQL, execMode, pkg.NamespaceID, pkg.PackageID).Scan(&st.Fingerprint); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm fingerprint of %s: %w", pkg.Name, err))
	}
	if len(st.Versions) == 0 {
		return nil, errs.New(CodePackageUnknown, "npm package unknown: %s has no active version", pkg.Name)
	}
	byID := make(map[uuid.UUID]string, len(st.Versions))
	for _, v := range st.Versions {
		byID[v.ID] = v.Version
	}
	for _, t := range tagRows {
		if v, ok := byID[t.VersionID]; ok {
			t.Version = v
			st.Tags = append(st.Tags, t)
		}
	}
	return st, nil
}

// RebuildMetadata makes sure a package's metadata files are fresh and
// returns them. Unless opts.Force, fresh rows of every kind are returned as
// they are. Otherwise the state is loaded and built (no lock held), the
// changed documents are stored as blobs, and one transaction locks the
// package row FOR NO KEY UPDATE (so no writer is in flight), checks that
// the fingerprint is still the one the documents were built from, and swaps
// the rows: new attachments in, rows upserted with expires_at = now() + TTL,
// old attachments detached (blob rows locked first, GC candidate when the
// last attachment goes; docs/garbage-collection.md, Rules and Lock
// protocol). When the state keeps changing, the last
// built documents are returned uncached.
func (s *Store) RebuildMetadata(ctx context.Context, repo *Repository, pkg PackageRef, opts MetadataOptions, build BuildFunc) (*RebuildResult, error) {
	if opts.TTL <= 0 {
		opts.TTL = DefaultPackumentTTL
	}
	var last *RebuildResult
	for range 3 {
		existing, err := s.metadataRows(ctx, pkg)
		if err != nil {
			return nil, err
		}
		if !opts.Force && allFresh(existing) {
			res := &RebuildResult{Files: map[enum.NpmMetadataKind]*MetadataFile{}}
			for k, r := range existing {
				b, err := s.core.StatBlob(ctx, pkg.NamespaceID, r.sha)
				if err != nil {
					return nil, db.MapErr(err)
				}
				res.Files[k] = &MetadataFile{Kind: k, SHA256: r.sha, Blob: b}
			}
			return res, nil
		}
		st, err := s.LoadPackageState(ctx, pkg)
		if err != nil {
			return nil, err
		}
		docs, err := build(st)
		if err != nil {
			return nil, fmt.Errorf("store: npm build %s: %w", pkg.Name, err)
		}
		res := &RebuildResult{Files: map[enum.NpmMetadataKind]*MetadataFile{}, Rebuilt: true, Rev: st.Rev()}
		for _, k := range metadataKinds {
			d, ok := docs[k]
			if !ok {
				return nil, fmt.Errorf("store: npm build %s: no %s document", pkg.Name, k)
			}
			res.Files[k] = &MetadataFile{Kind: k, SHA256: sha256.Sum256(d), Data: d}
		}
		last = res
		// Store the documents whose bytes differ from the current rows.
		for _, k := range metadataKinds {
			f := res.Files[k]
			if r, ok := existing[k]; ok && r.sha == f.SHA256 {
				continue
			}
			if _, err := s.core.PutBlob(ctx, store.UploadRef{NamespaceID: repo.NamespaceID, RepositoryID: repo.RepositoryID},
				bytes.NewReader(f.Data), store.Expected{SHA256: f.SHA256, Size: int64(len(f.Data))}); err != nil {
				if store.HasCode(err, store.CodeRetryable) {
					return res, nil // see below
				}
				return nil, fmt.Errorf("store: npm store %s of %s: %w", k, pkg.Name, err)
			}
		}
		err = s.core.WithTx(ctx, func(tx pgx.Tx) error { return s.swapMetadata(ctx, tx, pkg, st.Fingerprint, res, opts.TTL) })
		switch {
		case err == nil:
			res.Stored = true
			return res, nil
		case errors.Is(err, db.ErrRace):
			continue
		case store.HasCode(err, store.CodeRetryable):
			// A writer holds the package (a publish waiting on its own
			// locks) or the swap lost a deadlock. The documents were built
			// from one snapshot and are right to serve; caching them is
			// only an optimisation, so a reader never fails for it.
			return res, nil
		default:
			return nil, err
		}
	}
	return last, nil
}

func allFresh(rows map[enum.NpmMetadataKind]*metadataRow) bool {
	for _, k := range metadataKinds {
		if r, ok := rows[k]; !ok || !r.fresh {
			return false
		}
	}
	return true
}

// swapSQL is the metadata-file upsert for the changed kinds: the
// old CTE reads the rows being replaced (locked FOR UPDATE by the caller),
// the upsert points them at the new attachments with a fresh expiry, and
// the statement returns the old attachments, which the caller detaches in
// the same transaction (the documented CTE deletes them; Detach does that
// and also records the GC candidate that detaching the last attachment
// requires; docs/garbage-collection.md, Rules).
const swapSQL = `
WITH old AS (
	SELECT m.blob_storage_attachment_id, m.blob_sha256 FROM npm_metadata_files m
	WHERE m.namespace_id = $1 AND m.npm_package_id = $2 AND m.kind = ANY($4::smallint[])
), up AS (
	INSERT INTO npm_metadata_files AS m (id, namespace_id, npm_package_id, kind, blob_storage_attachment_id, blob_sha256, expires_at)
	SELECT u.id, $1, $2, u.kind, u.att, u.sha, now() + make_interval(secs => $7)
	FROM unnest($3::uuid[], $4::smallint[], $5::bigint[], $6::bytea[]) AS u(id, kind, att, sha)
	ON CONFLICT (namespace_id, npm_package_id, kind) DO UPDATE
	SET blob_storage_attachment_id = EXCLUDED.blob_storage_attachment_id,
	    blob_sha256 = EXCLUDED.blob_sha256,
	    expires_at = EXCLUDED.expires_at
)
SELECT o.blob_storage_attachment_id, o.blob_sha256 FROM old o`

// swapMetadata is the swap transaction of RebuildMetadata.
func (s *Store) swapMetadata(ctx context.Context, tx pgx.Tx, pkg PackageRef, fingerprint string, res *RebuildResult, ttl time.Duration) error {
	var active bool
	err := tx.QueryRow(ctx, `SELECT soft_deleted_at IS NULL FROM npm_packages WHERE namespace_id = $1 AND id = $2 FOR NO KEY UPDATE`, execMode,
		pkg.NamespaceID, pkg.PackageID).Scan(&active)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !active) {
		return errs.New(CodePackageUnknown, "npm package unknown: %s", pkg.Name)
	}
	if err != nil {
		return fmt.Errorf("store: npm swap lock %s: %w", pkg.Name, err)
	}
	var now string
	if err := tx.QueryRow(ctx, fingerprintSQL, execMode, pkg.NamespaceID, pkg.PackageID).Scan(&now); err != nil {
		return fmt.Errorf("store: npm swap fingerprint %s: %w", pkg.Name, err)
	}
	if now != fingerprint {
		return db.ErrRace
	}
	// The current rows, locked.
	rows, err := tx.Query(ctx, `
		SELECT kind, blob_sha256 FROM npm_metadata_files
		WHERE namespace_id = $1 AND npm_package_id = $2 FOR UPDATE`, execMode, pkg.NamespaceID, pkg.PackageID)
	if err != nil {
		return fmt.Errorf("store: npm swap rows %s: %w", pkg.Name, err)
	}
	current := map[enum.NpmMetadataKind][32]byte{}
	for rows.Next() {
		var kind int16
		var sha []byte
		if err := rows.Scan(&kind, &sha); err != nil {
			rows.Close()
			return fmt.Errorf("store: npm swap rows %s: %w", pkg.Name, err)
		}
		current[enum.NpmMetadataKind(kind)] = [32]byte(sha)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: npm swap rows %s: %w", pkg.Name, err)
	}
	var (
		bump           []int16
		changedKinds   []int16
		changedDigests [][32]byte
		lockSet        [][32]byte
	)
	for _, k := range metadataKinds {
		f := res.Files[k]
		if sha, ok := current[k]; ok && sha == f.SHA256 {
			bump = append(bump, int16(k))
			continue
		}
		changedKinds = append(changedKinds, int16(k))
		changedDigests = append(changedDigests, f.SHA256)
		lockSet = append(lockSet, f.SHA256)
		if sha, ok := current[k]; ok {
			lockSet = append(lockSet, sha)
		}
	}
	if len(changedKinds) > 0 {
		// Blob rows of both the new and the old files locked in
		// ascending digest order before any attachment changes
		// (docs/garbage-collection.md, Lock protocol).
		if _, err := blobsql.Lock(ctx, tx, pkg.NamespaceID, blobsql.SortedDigests(lockSet)); err != nil {
			return err
		}
		atts, err := s.core.Attach(ctx, tx, pkg.NamespaceID, changedDigests)
		if err != nil {
			if store.HasCode(err, store.CodeBlobUnknown) || store.HasCode(err, store.CodeBlobMustReupload) {
				// A document that was current when we looked (so not
				// uploaded) has been replaced and collected: build again.
				return db.ErrRace
			}
			return err
		}
		attIDs := make([]int64, len(atts))
		shas := make([][]byte, len(atts))
		for i, a := range atts {
			attIDs[i] = a.ID
			shas[i] = changedDigests[i][:]
		}
		rows, err := tx.Query(ctx, swapSQL, execMode, pkg.NamespaceID, pkg.PackageID,
			db.NewIDs(len(changedKinds)), changedKinds, attIDs, shas, ttl.Seconds())
		if err != nil {
			return fmt.Errorf("store: npm swap %s: %w", pkg.Name, err)
		}
		var old []store.Attachment
		for rows.Next() {
			var a store.Attachment
			var sha []byte
			if err := rows.Scan(&a.ID, &sha); err != nil {
				rows.Close()
				return fmt.Errorf("store: npm swap %s: %w", pkg.Name, err)
			}
			a.SHA256 = [32]byte(sha)
			old = append(old, a)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: npm swap %s: %w", pkg.Name, err)
		}
		if _, err := s.core.Detach(ctx, tx, pkg.NamespaceID, old); err != nil {
			return err
		}
	}
	if len(bump) > 0 {
		if _, err := tx.Exec(ctx, `
			UPDATE npm_metadata_files SET expires_at = now() + make_interval(secs => $4)
			WHERE namespace_id = $1 AND npm_package_id = $2 AND kind = ANY($3::smallint[])`, execMode,
			pkg.NamespaceID, pkg.PackageID, bump, ttl.Seconds()); err != nil {
			return fmt.Errorf("store: npm swap %s: %w", pkg.Name, err)
		}
	}
	return nil
}

// expireMetadata force-expires a package's metadata files (writers call
// it in their transaction).
func expireMetadata(ctx context.Context, tx pgx.Tx, namespaceID, packageID uuid.UUID) error {
	_, err := tx.Exec(ctx, `
		UPDATE npm_metadata_files SET expires_at = now()
		WHERE namespace_id = $1 AND npm_package_id = $2 AND expires_at > now()`, execMode, namespaceID, packageID)
	if err != nil {
		return fmt.Errorf("store: expire npm metadata: %w", err)
	}
	return nil
}

// dropMetadata deletes a package's metadata files and detaches their
// blobs (the package went to the trash: its cache is garbage).
func (s *Store) dropMetadata(ctx context.Context, tx pgx.Tx, namespaceID, packageID uuid.UUID) error {
	rows, err := tx.Query(ctx, `
		SELECT blob_storage_attachment_id, blob_sha256 FROM npm_metadata_files
		WHERE namespace_id = $1 AND npm_package_id = $2 FOR UPDATE`, execMode, namespaceID, packageID)
	if err != nil {
		return fmt.Errorf("store: drop npm metadata: %w", err)
	}
	var atts []store.Attachment
	for rows.Next() {
		var a store.Attachment
		var sha []byte
		if err := rows.Scan(&a.ID, &sha); err != nil {
			rows.Close()
			return fmt.Errorf("store: drop npm metadata: %w", err)
		}
		a.SHA256 = [32]byte(sha)
		atts = append(atts, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: drop npm metadata: %w", err)
	}
	if len(atts) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM npm_metadata_files WHERE namespace_id = $1 AND npm_package_id = $2`, execMode,
		namespaceID, packageID); err != nil {
		return fmt.Errorf("store: drop npm metadata: %w", err)
	}
	_, err = s.core.Detach(ctx, tx, namespaceID, atts)
	return err
}

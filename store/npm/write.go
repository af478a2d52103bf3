package npm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/internal/npmsemver"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// Metadata writes of hosted npm packages: dist-tags, deprecation,
// unpublish of versions and of whole packages. Each runs in one foreground
// transaction that locks the package row first, changes the rows,
// force-expires the package's metadata files and runs the write hook.

// checkRev compares a client revision ("<n>-<fingerprint>") with the
// package's current fingerprint; "" and "undefined" (what npm sends for a
// document without _rev) skip the check.
func checkRev(ctx context.Context, tx pgx.Tx, pkg PackageRef, rev string) error {
	if rev == "" || rev == "undefined" {
		return nil
	}
	_, want, _ := strings.Cut(rev, "-")
	var now string
	if err := tx.QueryRow(ctx, fingerprintSQL, execMode, pkg.NamespaceID, pkg.PackageID).Scan(&now); err != nil {
		return fmt.Errorf("store: npm revision of %s: %w", pkg.Name, err)
	}
	if want != now {
		return errs.New(CodeRevisionConflict, "npm document revision conflict: %s is at a newer revision than %s; fetch it again", pkg.Name, rev)
	}
	return nil
}

func packageRef(repo *Repository, pkgID uuid.UUID, name string) PackageRef {
	return PackageRef{NamespaceID: repo.NamespaceID, NpmRepositoryID: repo.NpmRepositoryID, PackageID: pkgID, Name: name}
}

// SetTag points a dist-tag at an active version (creating the tag or
// moving it). It reports whether the tag is new.
func (s *Store) SetTag(ctx context.Context, repo *Repository, name, tag, version string, hook WriteHook) (bool, error) {
	var created bool
	err := db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		pkgID, err := lockPackage(ctx, tx, repo, name, "FOR SHARE")
		if err != nil {
			return err
		}
		var versionID uuid.UUID
		var count int64
		err = tx.QueryRow(ctx, `
			SELECT v.id, (SELECT count(*) FROM npm_tags t WHERE t.namespace_id = $1 AND t.npm_package_id = $2 AND t.name <> $4)
			FROM npm_versions v
			WHERE v.namespace_id = $1 AND v.npm_package_id = $2 AND v.version = $3 AND v.soft_deleted_at IS NULL`, execMode,
			repo.NamespaceID, pkgID, version, tag).Scan(&versionID, &count)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(CodeVersionUnknown, "npm version unknown: %s@%s", name, version)
		}
		if err != nil {
			return fmt.Errorf("store: npm dist-tag %s: %w", name, err)
		}
		if count >= MaxTagsPerPackage {
			return errs.New(CodeLimit, "npm package limit reached: %s has %d dist-tags; the limit is %d", name, count, MaxTagsPerPackage)
		}
		err = tx.QueryRow(ctx, `
			INSERT INTO npm_tags AS t (id, namespace_id, npm_package_id, npm_version_id, name)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (namespace_id, npm_package_id, name) DO UPDATE SET npm_version_id = EXCLUDED.npm_version_id
			RETURNING t.id = $1`, execMode, db.NewID(), repo.NamespaceID, pkgID, versionID, tag).Scan(&created)
		if err != nil {
			return fmt.Errorf("store: npm dist-tag %s: %w", name, err)
		}
		return s.finishWrite(ctx, tx, packageRef(repo, pkgID, name), hook, tagsDelta(pkgID, boolInt(created)))
	})
	return created, err
}

// RemoveTag deletes a dist-tag. The latest tag cannot be removed (every
// package has one; unpublish moves it).
func (s *Store) RemoveTag(ctx context.Context, repo *Repository, name, tag string, hook WriteHook) error {
	if tag == "latest" {
		return errs.New(CodeInvalid, "invalid npm data: the latest dist-tag cannot be removed; point it at another version instead")
	}
	return db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		pkgID, err := lockPackage(ctx, tx, repo, name, "FOR SHARE")
		if err != nil {
			return err
		}
		tag2, err := tx.Exec(ctx, `DELETE FROM npm_tags WHERE namespace_id = $1 AND npm_package_id = $2 AND name = $3`, execMode,
			repo.NamespaceID, pkgID, tag)
		if err != nil {
			return fmt.Errorf("store: npm dist-tag %s: %w", name, err)
		}
		if tag2.RowsAffected() == 0 {
			return errs.New(CodeTagUnknown, "npm dist-tag unknown: %s has no dist-tag %q", name, tag)
		}
		return s.finishWrite(ctx, tx, packageRef(repo, pkgID, name), hook, tagsDelta(pkgID, -1))
	})
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func tagsDelta(pkgID uuid.UUID, n int64) []counterDelta {
	return []counterDelta{{enum.CounterTargetNpmPackage, pkgID, enum.CounterFieldTagsCount, n}}
}

// finishWrite is the common tail of a metadata write: counters, cache
// expiry and the hook.
func (s *Store) finishWrite(ctx context.Context, tx pgx.Tx, pkg PackageRef, hook WriteHook, deltas []counterDelta) error {
	if err := insertCounterDeltas(ctx, tx, pkg.NamespaceID, deltas); err != nil {
		return err
	}
	if err := expireMetadata(ctx, tx, pkg.NamespaceID, pkg.PackageID); err != nil {
		return err
	}
	if hook != nil {
		if err := hook(ctx, tx, pkg); err != nil {
			return fmt.Errorf("store: npm write hook: %w", err)
		}
	}
	return nil
}

// PackageUpdate is a metadata update of a package (npm's PUT of the whole
// document without attachments).
type PackageUpdate struct {
	Name string
	// Rev, when not empty (or "undefined"), must be the current revision.
	Rev string
	// Deprecations: version -> message; "" removes the deprecation.
	// Versions not listed keep theirs.
	Deprecations map[string]string
	// Keep, when not nil, lists the versions the client kept: every other
	// active version is unpublished (PUT /<name>/-rev/<rev>).
	Keep []string
	Hook WriteHook
}

// UpdateResult reports what an update changed.
type UpdateResult struct {
	Deprecated, Undeprecated, Unpublished []string
	// Latest is the version latest points at afterwards ("" when the
	// package went to the trash).
	Latest         string
	PackageDeleted bool
}

type activeVersion struct {
	id         uuid.UUID
	version    string
	deprecated string
}

// UpdatePackage applies deprecations and unpublishes versions. The
// package row is locked FOR NO KEY UPDATE (one metadata writer at a time,
// and the revision check means something). Unpublished versions are
// soft-deleted with their files (they stay in the trash, restorable, and
// their version strings are never reused); dist-tags pointing at them are
// removed and latest is recomputed on the server: the highest remaining
// release, or the highest prerelease when no release remains. When no
// active version remains the package goes to the trash too.
func (s *Store) UpdatePackage(ctx context.Context, repo *Repository, upd PackageUpdate) (*UpdateResult, error) {
	for v, msg := range upd.Deprecations {
		if msg != "" && len(msg) > 4096 {
			return nil, errs.New(CodeInvalid, "invalid npm data: the deprecation message of %s is longer than 4096 bytes", v)
		}
	}
	var res *UpdateResult
	err := db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		res = &UpdateResult{}
		pkgID, err := lockPackage(ctx, tx, repo, upd.Name, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		pkg := packageRef(repo, pkgID, upd.Name)
		if err := checkRev(ctx, tx, pkg, upd.Rev); err != nil {
			return err
		}
		active, err := activeVersions(ctx, tx, pkg)
		if err != nil {
			return err
		}
		byVersion := make(map[string]*activeVersion, len(active))
		for i := range active {
			byVersion[active[i].version] = &active[i]
		}
		// Deprecations: only real changes are written.
		var changeIDs []uuid.UUID
		var changeMsgs []string
		for v, msg := range upd.Deprecations {
			a, ok := byVersion[v]
			if !ok {
				return errs.New(CodeVersionUnknown, "npm version unknown: %s@%s (a metadata update cannot add versions; publish them with their tarball)", upd.Name, v)
			}
			if a.deprecated == msg {
				continue
			}
			changeIDs = append(changeIDs, a.id)
			changeMsgs = append(changeMsgs, msg)
			if msg == "" {
				res.Undeprecated = append(res.Undeprecated, v)
			} else {
				res.Deprecated = append(res.Deprecated, v)
			}
		}
		if err := setDeprecations(ctx, tx, pkg, changeIDs, changeMsgs); err != nil {
			return err
		}
		// Unpublish.
		var removed []uuid.UUID
		if upd.Keep != nil {
			for _, v := range upd.Keep {
				if _, ok := byVersion[v]; !ok {
					return errs.New(CodeVersionUnknown, "npm version unknown: %s@%s", upd.Name, v)
				}
			}
			for _, a := range active {
				if !slices.Contains(upd.Keep, a.version) {
					removed = append(removed, a.id)
					res.Unpublished = append(res.Unpublished, a.version)
				}
			}
		}
		remaining := active[:0:0]
		for _, a := range active {
			if !slices.Contains(removed, a.id) {
				remaining = append(remaining, a)
			}
		}
		var deltas []counterDelta
		if len(removed) > 0 {
			d, err := s.unpublishVersions(ctx, tx, pkg, removed, remaining)
			if err != nil {
				return err
			}
			deltas = append(deltas, d...)
			if len(remaining) == 0 {
				res.PackageDeleted = true
				return s.trashPackage(ctx, tx, pkg, upd.Hook, deltas)
			}
		}
		if len(removed) == 0 && len(changeIDs) == 0 {
			res.Latest = ""
			return nil // nothing changed
		}
		if err := tx.QueryRow(ctx, `
			SELECT v.version FROM npm_tags t
			JOIN npm_versions v ON v.namespace_id = t.namespace_id AND v.id = t.npm_version_id
			WHERE t.namespace_id = $1 AND t.npm_package_id = $2 AND t.name = 'latest'`, execMode,
			pkg.NamespaceID, pkg.PackageID).Scan(&res.Latest); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("store: npm latest of %s: %w", upd.Name, err)
		}
		return s.finishWrite(ctx, tx, pkg, upd.Hook, deltas)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func activeVersions(ctx context.Context, tx pgx.Tx, pkg PackageRef) ([]activeVersion, error) {
	rows, err := tx.Query(ctx, `
		SELECT id, version, coalesce(package_json->>'deprecated', '') FROM npm_versions
		WHERE namespace_id = $1 AND npm_package_id = $2 AND soft_deleted_at IS NULL
		ORDER BY created_at, id`, execMode, pkg.NamespaceID, pkg.PackageID)
	if err != nil {
		return nil, fmt.Errorf("store: npm versions of %s: %w", pkg.Name, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (activeVersion, error) {
		var a activeVersion
		err := r.Scan(&a.id, &a.version, &a.deprecated)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: npm versions of %s: %w", pkg.Name, err)
	}
	return out, nil
}

// setDeprecations rewrites the package_json of the given versions with
// the new deprecation message, validating each resulting document against
// the schema before it is written.
func setDeprecations(ctx context.Context, tx pgx.Tx, pkg PackageRef, ids []uuid.UUID, msgs []string) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `
		SELECT id, package_json FROM npm_versions
		WHERE namespace_id = $1 AND id = ANY($2::uuid[])`, execMode, pkg.NamespaceID, ids)
	if err != nil {
		return fmt.Errorf("store: npm deprecate %s: %w", pkg.Name, err)
	}
	docs := map[uuid.UUID][]byte{}
	for rows.Next() {
		var id uuid.UUID
		var doc []byte
		if err := rows.Scan(&id, &doc); err != nil {
			rows.Close()
			return fmt.Errorf("store: npm deprecate %s: %w", pkg.Name, err)
		}
		docs[id] = doc
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: npm deprecate %s: %w", pkg.Name, err)
	}
	newDocs := make([]string, len(ids))
	for i, id := range ids {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(docs[id], &m); err != nil {
			return fmt.Errorf("store: npm deprecate %s: stored package_json: %w", pkg.Name, err)
		}
		if msgs[i] == "" {
			delete(m, "deprecated")
		} else {
			raw, _ := json.Marshal(msgs[i])
			m["deprecated"] = raw
		}
		out, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("store: npm deprecate %s: %w", pkg.Name, err)
		}
		if err := ValidatePackageJSON(out); err != nil {
			return err
		}
		newDocs[i] = string(out)
	}
	_, err = tx.Exec(ctx, `
		UPDATE npm_versions v SET package_json = u.doc
		FROM unnest($2::uuid[], $3::jsonb[]) AS u(id, doc)
		WHERE v.namespace_id = $1 AND v.id = u.id`, execMode, pkg.NamespaceID, ids, newDocs)
	if err != nil {
		return fmt.Errorf("store: npm deprecate %s: %w", pkg.Name, err)
	}
	return nil
}

// unpublishVersions soft-deletes versions and their files, removes the
// dist-tags that pointed at them and recomputes latest among remaining.
func (s *Store) unpublishVersions(ctx context.Context, tx pgx.Tx, pkg PackageRef, removed []uuid.UUID, remaining []activeVersion) ([]counterDelta, error) {
	var tagsGone int64
	err := tx.QueryRow(ctx, `
		WITH v AS (
			UPDATE npm_versions SET soft_deleted_at = now()
			WHERE namespace_id = $1 AND npm_package_id = $2 AND id = ANY($3::uuid[]) AND soft_deleted_at IS NULL
		), f AS (
			UPDATE npm_files SET soft_deleted_at = now()
			WHERE namespace_id = $1 AND npm_version_id = ANY($3::uuid[]) AND soft_deleted_at IS NULL
		), t AS (
			DELETE FROM npm_tags WHERE namespace_id = $1 AND npm_package_id = $2 AND npm_version_id = ANY($3::uuid[])
			RETURNING 1
		)
		SELECT count(*) FROM t`, execMode, pkg.NamespaceID, pkg.PackageID, removed).Scan(&tagsGone)
	if err != nil {
		return nil, fmt.Errorf("store: npm unpublish %s: %w", pkg.Name, err)
	}
	deltas := []counterDelta{{enum.CounterTargetNpmPackage, pkg.PackageID, enum.CounterFieldTagsCount, -tagsGone}}
	if len(remaining) == 0 {
		return deltas, nil
	}
	// latest: recomputed here, never taken from the client (npm picks the
	// highest version including prereleases).
	var hasLatest bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM npm_tags WHERE namespace_id = $1 AND npm_package_id = $2 AND name = 'latest')`, execMode,
		pkg.NamespaceID, pkg.PackageID).Scan(&hasLatest); err != nil {
		return nil, fmt.Errorf("store: npm unpublish %s: %w", pkg.Name, err)
	}
	if hasLatest {
		return deltas, nil
	}
	latest := pickLatest(remaining)
	if _, err := tx.Exec(ctx, `
		INSERT INTO npm_tags (id, namespace_id, npm_package_id, npm_version_id, name)
		VALUES ($1, $2, $3, $4, 'latest')`, execMode, db.NewID(), pkg.NamespaceID, pkg.PackageID, latest.id); err != nil {
		return nil, fmt.Errorf("store: npm unpublish %s: latest: %w", pkg.Name, err)
	}
	deltas[0].delta++
	return deltas, nil
}

// pickLatest returns the highest release, or the highest prerelease
// when there is no release (SemVer precedence; unparsable versions last).
func pickLatest(vs []activeVersion) activeVersion {
	var best activeVersion
	var bestV npmsemver.Version
	found := false
	for _, a := range vs {
		v, ok := npmsemver.ParseVersion(a.version)
		if !ok {
			continue
		}
		better := !found ||
			(bestV.IsPrerelease() && !v.IsPrerelease()) ||
			(bestV.IsPrerelease() == v.IsPrerelease() && v.Compare(bestV) > 0)
		if better {
			best, bestV, found = a, v, true
		}
	}
	if !found {
		return vs[len(vs)-1]
	}
	return best
}

// trashPackage soft-deletes a package (its versions must already be
// soft-deleted or are soft-deleted here with their files), drops its
// metadata files and runs the hook.
func (s *Store) trashPackage(ctx context.Context, tx pgx.Tx, pkg PackageRef, hook WriteHook, deltas []counterDelta) error {
	_, err := tx.Exec(ctx, `
		WITH v AS (
			UPDATE npm_versions SET soft_deleted_at = now()
			WHERE namespace_id = $1 AND npm_package_id = $2 AND soft_deleted_at IS NULL
			RETURNING id
		), f AS (
			UPDATE npm_files SET soft_deleted_at = now()
			WHERE namespace_id = $1 AND npm_version_id IN (SELECT id FROM v) AND soft_deleted_at IS NULL
		)
		UPDATE npm_packages SET soft_deleted_at = now() WHERE namespace_id = $1 AND id = $2`, execMode,
		pkg.NamespaceID, pkg.PackageID)
	if err != nil {
		return fmt.Errorf("store: npm delete %s: %w", pkg.Name, err)
	}
	if err := insertCounterDeltas(ctx, tx, pkg.NamespaceID, deltas); err != nil {
		return err
	}
	if err := s.dropMetadata(ctx, tx, pkg.NamespaceID, pkg.PackageID); err != nil {
		return err
	}
	if hook != nil {
		if err := hook(ctx, tx, pkg); err != nil {
			return fmt.Errorf("store: npm write hook: %w", err)
		}
	}
	return nil
}

// DeletePackage unpublishes a whole package: the package, its versions
// and their files go to the trash (restorable; dist-tags are kept for a
// restore), its metadata files are dropped.
func (s *Store) DeletePackage(ctx context.Context, repo *Repository, name, rev string, hook WriteHook) error {
	return db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		pkgID, err := lockPackage(ctx, tx, repo, name, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		pkg := packageRef(repo, pkgID, name)
		if err := checkRev(ctx, tx, pkg, rev); err != nil {
			return err
		}
		return s.trashPackage(ctx, tx, pkg, hook, nil)
	})
}

// UnpublishFile is npm's DELETE of a tarball: when its version is still
// active, the version is unpublished (a version without its tarball is of
// no use); when it was unpublished already (npm sends the DELETE after the
// PUT that removed the version), nothing is left to do. CodeFileUnknown
// when the tarball never existed.
func (s *Store) UnpublishFile(ctx context.Context, repo *Repository, name, version, fileName, rev string, hook WriteHook) error {
	return db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		pkgID, err := lockPackage(ctx, tx, repo, name, "FOR NO KEY UPDATE")
		if err != nil && !store.HasCode(err, CodePackageUnknown) {
			return err
		}
		if err == nil {
			pkg := packageRef(repo, pkgID, name)
			active, err := activeVersions(ctx, tx, pkg)
			if err != nil {
				return err
			}
			var hit *activeVersion
			var remaining []activeVersion
			for i := range active {
				if active[i].version == version {
					hit = &active[i]
				} else {
					remaining = append(remaining, active[i])
				}
			}
			if hit != nil {
				var ok bool
				if err := tx.QueryRow(ctx, `
					SELECT EXISTS (SELECT 1 FROM npm_files WHERE namespace_id = $1 AND npm_version_id = $2
					               AND file_name = $3 AND soft_deleted_at IS NULL)`, execMode,
					repo.NamespaceID, hit.id, fileName).Scan(&ok); err != nil {
					return fmt.Errorf("store: npm unpublish %s: %w", name, err)
				}
				if !ok {
					return errs.New(CodeFileUnknown, "npm tarball unknown: %s", fileName)
				}
				if err := checkRev(ctx, tx, pkg, rev); err != nil {
					return err
				}
				deltas, err := s.unpublishVersions(ctx, tx, pkg, []uuid.UUID{hit.id}, remaining)
				if err != nil {
					return err
				}
				if len(remaining) == 0 {
					return s.trashPackage(ctx, tx, pkg, hook, deltas)
				}
				return s.finishWrite(ctx, tx, pkg, hook, deltas)
			}
		}
		// Not active: was it published and unpublished?
		var existed bool
		if err := tx.QueryRow(ctx, `
			SELECT EXISTS (
				SELECT 1 FROM npm_files f
				JOIN npm_versions v ON v.namespace_id = f.namespace_id AND v.id = f.npm_version_id
				JOIN npm_packages p ON p.namespace_id = v.namespace_id AND p.id = v.npm_package_id
				WHERE f.namespace_id = $1 AND v.namespace_id = $1 AND p.namespace_id = $1
				  AND p.npm_repository_id = $2 AND p.name = $3 AND v.version = $4 AND f.file_name = $5
				  AND v.soft_deleted_at IS NOT NULL)`, execMode,
			repo.NamespaceID, repo.NpmRepositoryID, name, version, fileName).Scan(&existed); err != nil {
			return fmt.Errorf("store: npm unpublish %s: %w", name, err)
		}
		if !existed {
			return errs.New(CodeFileUnknown, "npm tarball unknown: %s", fileName)
		}
		return nil
	})
}

package npm

import (
	"context"
	"fmt"
	"time"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Read side of hosted npm repositories for the management API: packages
// by name, versions by SemVer precedence (npm_versions_semver_idx), tags,
// tarballs and package.json details, each loaded for many parents in one
// statement so GraphQL dataloaders never query per row. Every statement
// names the namespace as $1, so each partitioned table is pruned to one
// partition.

// Package is an npm_packages row with the repository (repositories.id)
// it belongs to.
type Package struct {
	ID               uuid.UUID
	NamespaceID      uuid.UUID
	RepositoryID     uuid.UUID
	Name             string
	Scope            *string
	LastDownloadedAt *time.Time
	SoftDeletedAt    *time.Time
}

const packageColumns = `np.id, np.namespace_id, nr.repository_id, np.name, np.scope, np.last_downloaded_at, np.soft_deleted_at`

func scanPackage(row pgx.Row) (*Package, error) {
	var p Package
	if err := row.Scan(&p.ID, &p.NamespaceID, &p.RepositoryID, &p.Name, &p.Scope, &p.LastDownloadedAt, &p.SoftDeletedAt); err != nil {
		return nil, err
	}
	return &p, nil
}

// PackagesOfRepositories returns, per repository (repositories.id),
// the first limit+1 active packages by name after afterName (nil: from the
// start): one LATERAL range scan of npm_packages_active_name_key per
// repository.
func (s *Store) PackagesOfRepositories(ctx context.Context, nsID uuid.UUID, repositoryIDs []uuid.UUID, afterName *string, limit int) (map[uuid.UUID][]*Package, error) {
	args := []any{nsID, repositoryIDs, limit + 1}
	keyset := ""
	if afterName != nil {
		args, keyset = append(args, *afterName), ` AND p.name > $4`
	}
	return db.GroupBy(ctx, s.pool, "npm packages", `
		SELECT nr.repository_id, `+packageColumns+`
		FROM npm_repositories nr
		CROSS JOIN LATERAL (
			SELECT p.* FROM npm_packages p
			WHERE p.namespace_id = $1 AND p.npm_repository_id = nr.id AND p.soft_deleted_at IS NULL`+keyset+`
			ORDER BY p.name LIMIT $3) np
		WHERE nr.namespace_id = $1 AND nr.repository_id = ANY($2)
		ORDER BY nr.repository_id, np.name`, args, scanPackage)
}

// CountPackages counts the active packages of npm repositories, per
// repositories.id.
func (s *Store) CountPackages(ctx context.Context, nsID uuid.UUID, repositoryIDs []uuid.UUID) (map[uuid.UUID]int, error) {
	return db.CountBy(ctx, s.pool, "npm packages", `
		SELECT nr.repository_id, count(*)
		FROM npm_repositories nr
		JOIN npm_packages np ON np.namespace_id = $1 AND np.npm_repository_id = nr.id
		WHERE nr.namespace_id = $1 AND nr.repository_id = ANY($2) AND np.soft_deleted_at IS NULL
		GROUP BY nr.repository_id`, nsID, repositoryIDs)
}

// PackagesByIDs loads packages (trash included) by id.
func (s *Store) PackagesByIDs(ctx context.Context, nsID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]*Package, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+packageColumns+`
		FROM npm_packages np
		JOIN npm_repositories nr ON nr.namespace_id = $1 AND nr.id = np.npm_repository_id
		WHERE np.namespace_id = $1 AND np.id = ANY($2)`, nsID, ids)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: load npm packages: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Package, error) { return scanPackage(r) })
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: load npm packages: %w", err))
	}
	m := make(map[uuid.UUID]*Package, len(out))
	for _, p := range out {
		m[p.ID] = p
	}
	return m, nil
}

// PackageName names an active package of a repository (repositories.id).
type PackageName struct {
	RepositoryID uuid.UUID
	Name         string
}

// PackagesByName loads active packages by (repository, name).
func (s *Store) PackagesByName(ctx context.Context, nsID uuid.UUID, names []PackageName) (map[PackageName]*Package, error) {
	repos, ns := make([]uuid.UUID, len(names)), make([]string, len(names))
	for i, n := range names {
		repos[i], ns[i] = n.RepositoryID, n.Name
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+packageColumns+`
		FROM unnest($2::uuid[], $3::text[]) AS k(repository_id, name)
		JOIN npm_repositories nr ON nr.namespace_id = $1 AND nr.repository_id = k.repository_id
		JOIN npm_packages np ON np.namespace_id = $1 AND np.npm_repository_id = nr.id AND np.name = k.name
		WHERE np.soft_deleted_at IS NULL`, nsID, repos, ns)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm packages by name: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Package, error) { return scanPackage(r) })
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm packages by name: %w", err))
	}
	m := make(map[PackageName]*Package, len(out))
	for _, p := range out {
		m[PackageName{RepositoryID: p.RepositoryID, Name: p.Name}] = p
	}
	return m, nil
}

// VersionKey is the keyset position of the version listing: the
// precedence key (npm_semver_key) and the id.
type VersionKey struct {
	SemverKey []byte    `json:"k"`
	ID        uuid.UUID `json:"i"`
}

// VersionRow is an active version with its keyset position.
type VersionRow struct {
	Artifact
	Key VersionKey
}

// VersionsOfPackages returns, per package id, the first limit+1 active
// versions by descending SemVer precedence after the key (nil: from the
// highest): one LATERAL backward range scan of npm_versions_semver_idx per
// package.
func (s *Store) VersionsOfPackages(ctx context.Context, nsID uuid.UUID, pkgIDs []uuid.UUID, after *VersionKey, limit int) (map[uuid.UUID][]*VersionRow, error) {
	args := []any{nsID, pkgIDs, limit + 1}
	if after != nil {
		args = append(args, after.SemverKey, after.ID)
	}
	return db.GroupBy(ctx, s.pool, "npm versions", versionsPageSQL(after != nil), args, scanVersionRow)
}

// versionsPageSQL is VersionsOfPackages' statement ($4, $5: the
// keyset when keyset is set).
func versionsPageSQL(keyset bool) string {
	cond := ""
	if keyset {
		cond = ` AND (npm_semver_key(v.version), v.id) < ($4, $5)`
	}
	return `
		SELECT nv.npm_package_id, ` + artifactColumns + `, nv.k
		FROM unnest($2::uuid[]) AS pk(id)
		CROSS JOIN LATERAL (
			SELECT v.*, npm_semver_key(v.version) AS k FROM npm_versions v
			WHERE v.namespace_id = $1 AND v.npm_package_id = pk.id AND v.soft_deleted_at IS NULL` + cond + `
			ORDER BY npm_semver_key(v.version) DESC, v.id DESC LIMIT $3) nv
		JOIN npm_packages np ON np.namespace_id = $1 AND np.id = nv.npm_package_id
		JOIN npm_repositories nr ON nr.namespace_id = $1 AND nr.id = np.npm_repository_id
		ORDER BY nv.npm_package_id, nv.k DESC, nv.id DESC`
}

func scanVersionRow(row pgx.Row) (*VersionRow, error) {
	var v VersionRow
	if err := row.Scan(&v.ID, &v.NamespaceID, &v.RepositoryID, &v.PackageID, &v.PackageName, &v.Version,
		&v.SizeBytes, &v.CreatedAt, &v.LastDownloadedAt, &v.SoftDeletedAt, &v.Key.SemverKey); err != nil {
		return nil, err
	}
	v.Key.ID = v.ID
	return &v, nil
}

// CountVersionsOfPackages counts active versions per package id.
func (s *Store) CountVersionsOfPackages(ctx context.Context, nsID uuid.UUID, pkgIDs []uuid.UUID) (map[uuid.UUID]int, error) {
	return db.CountBy(ctx, s.pool, "npm versions", `
		SELECT npm_package_id, count(*) FROM npm_versions
		WHERE namespace_id = $1 AND npm_package_id = ANY($2) AND soft_deleted_at IS NULL
		GROUP BY npm_package_id`, nsID, pkgIDs)
}

// VersionName names an active version of a package.
type VersionName struct {
	PackageID uuid.UUID
	Version   string
}

// VersionsByName loads active versions by (package id, version).
func (s *Store) VersionsByName(ctx context.Context, nsID uuid.UUID, names []VersionName) (map[VersionName]*Artifact, error) {
	pkgs, vs := make([]uuid.UUID, len(names)), make([]string, len(names))
	for i, n := range names {
		pkgs[i], vs[i] = n.PackageID, n.Version
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+artifactColumns+`
		FROM unnest($2::uuid[], $3::text[]) AS k(package_id, version)
		JOIN npm_versions nv ON nv.namespace_id = $1 AND nv.npm_package_id = k.package_id AND nv.version = k.version
		JOIN npm_packages np ON np.namespace_id = $1 AND np.id = nv.npm_package_id
		JOIN npm_repositories nr ON nr.namespace_id = $1 AND nr.id = np.npm_repository_id
		WHERE nv.soft_deleted_at IS NULL`, nsID, pkgs, vs)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm versions by name: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Artifact, error) { return scanArtifact(r) })
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm versions by name: %w", err))
	}
	m := make(map[VersionName]*Artifact, len(out))
	for _, v := range out {
		m[VersionName{PackageID: v.PackageID, Version: v.Version}] = v
	}
	return m, nil
}

// DistTag is one dist-tag of a package.
type DistTag struct {
	Name      string
	VersionID uuid.UUID
}

// TagsOfPackages returns the dist-tags of packages by name, per
// package id (npm_tags_package_name_key).
func (s *Store) TagsOfPackages(ctx context.Context, nsID uuid.UUID, pkgIDs []uuid.UUID) (map[uuid.UUID][]*DistTag, error) {
	return db.GroupBy(ctx, s.pool, "npm dist-tags", `
		SELECT npm_package_id, name, npm_version_id FROM npm_tags
		WHERE namespace_id = $1 AND npm_package_id = ANY($2)
		ORDER BY npm_package_id, name`, []any{nsID, pkgIDs}, func(row pgx.Row) (*DistTag, error) {
		var t DistTag
		if err := row.Scan(&t.Name, &t.VersionID); err != nil {
			return nil, err
		}
		return &t, nil
	})
}

// TagNamesOfVersions returns the dist-tag names pointing at each
// version, by name (npm_tags_version_idx).
func (s *Store) TagNamesOfVersions(ctx context.Context, nsID uuid.UUID, versionIDs []uuid.UUID) (map[uuid.UUID][]string, error) {
	m, err := db.GroupBy(ctx, s.pool, "npm dist-tags", `
		SELECT npm_version_id, name FROM npm_tags
		WHERE namespace_id = $1 AND npm_version_id = ANY($2)
		ORDER BY npm_version_id, name`, []any{nsID, versionIDs}, func(row pgx.Row) (*string, error) {
		var n string
		return &n, row.Scan(&n)
	})
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID][]string, len(m))
	for id, names := range m {
		for _, n := range names {
			out[id] = append(out[id], *n)
		}
	}
	return out, nil
}

// VersionDetails is what the management API shows of a version's
// package.json: the deprecation, description, license, dist checksums and
// the dependency maps (JSON objects, nil when absent).
type VersionDetails struct {
	Deprecated   *string
	Description  *string
	License      *string
	Integrity    *string
	Shasum       *string
	Dependencies map[string][]byte // "dependencies", "devDependencies", ... -> JSON object
}

// dependencyFields are the dependency maps VersionDetails carries.
var dependencyFields = []string{"dependencies", "devDependencies", "peerDependencies", "optionalDependencies"}

// VersionDetailsByIDs projects the package.json of versions (trash
// included) by id; the document itself (and its readme) never leaves the
// database.
func (s *Store) VersionDetailsByIDs(ctx context.Context, nsID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]*VersionDetails, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id,
		       CASE WHEN jsonb_typeof(package_json->'deprecated') = 'string' AND package_json->>'deprecated' <> ''
		            THEN package_json->>'deprecated' END,
		       CASE WHEN jsonb_typeof(package_json->'description') = 'string' THEN package_json->>'description' END,
		       CASE WHEN jsonb_typeof(package_json->'license') = 'string' THEN package_json->>'license'
		            WHEN jsonb_typeof(package_json->'license'->'type') = 'string' THEN package_json->'license'->>'type' END,
		       package_json->'dist'->>'integrity', package_json->'dist'->>'shasum',
		       package_json->'dependencies', package_json->'devDependencies',
		       package_json->'peerDependencies', package_json->'optionalDependencies'
		FROM npm_versions WHERE namespace_id = $1 AND id = ANY($2)`, nsID, ids)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm version details: %w", err))
	}
	defer rows.Close()
	out := make(map[uuid.UUID]*VersionDetails, len(ids))
	for rows.Next() {
		var (
			id   uuid.UUID
			d    VersionDetails
			deps = make([][]byte, len(dependencyFields))
		)
		if err := rows.Scan(&id, &d.Deprecated, &d.Description, &d.License, &d.Integrity, &d.Shasum,
			&deps[0], &deps[1], &deps[2], &deps[3]); err != nil {
			return nil, fmt.Errorf("store: npm version details: %w", err)
		}
		d.Dependencies = make(map[string][]byte, len(deps))
		for i, f := range dependencyFields {
			if deps[i] != nil {
				d.Dependencies[f] = deps[i]
			}
		}
		out[id] = &d
	}
	if err := rows.Err(); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm version details: %w", err))
	}
	return out, nil
}

// FileInfo is an active npm_files row with its exact size.
type FileInfo struct {
	ID            uuid.UUID
	VersionID     uuid.UUID
	FileName      string
	SHA256        [32]byte
	Size          int64
	SoftDeletedAt *time.Time
}

// TarballsOfVersions returns the active tarball of each version (the
// first file by name; a version has one), riding npm_files_active_file_key.
func (s *Store) TarballsOfVersions(ctx context.Context, nsID uuid.UUID, versionIDs []uuid.UUID) (map[uuid.UUID]*FileInfo, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT DISTINCT ON (f.npm_version_id) f.id, f.npm_version_id, f.file_name, f.blob_sha256, bn.size, f.soft_deleted_at
		FROM npm_files f
		JOIN blob_storage_blobs_by_namespace bn ON bn.namespace_id = $1 AND bn.sha256 = f.blob_sha256
		WHERE f.namespace_id = $1 AND f.npm_version_id = ANY($2) AND f.soft_deleted_at IS NULL
		ORDER BY f.npm_version_id, f.file_name`, nsID, versionIDs)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm tarballs: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*FileInfo, error) {
		var (
			f   FileInfo
			sha []byte
		)
		if err := r.Scan(&f.ID, &f.VersionID, &f.FileName, &sha, &f.Size, &f.SoftDeletedAt); err != nil {
			return nil, err
		}
		if len(sha) != 32 {
			return nil, fmt.Errorf("npm file %s has a malformed digest", f.ID)
		}
		f.SHA256 = [32]byte(sha)
		return &f, nil
	})
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm tarballs: %w", err))
	}
	m := make(map[uuid.UUID]*FileInfo, len(out))
	for _, f := range out {
		m[f.VersionID] = f
	}
	return m, nil
}

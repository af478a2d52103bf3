package maven

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Batched reads of Maven packages, versions and files for the management
// API's dataloaders: each loads for many parents in one statement (LATERAL
// range scans of the active-row indexes), so nested GraphQL fields never
// query per row.

// PackageInfo is a package with the repository (repositories.id) it
// belongs to.
type PackageInfo struct {
	Package
	RepositoryID uuid.UUID
}

func scanPackageInfo(row pgx.Row) (*PackageInfo, error) {
	var p PackageInfo
	err := row.Scan(&p.ID, &p.NamespaceID, &p.MavenRepositoryID, &p.GroupID, &p.ArtifactID, &p.LastDownloadedAt, &p.SoftDeletedAt, &p.RepositoryID)
	return &p, err
}

// CountPackages counts active packages per repositories.id.
func (s *Store) CountPackages(ctx context.Context, nsID uuid.UUID, repositoryIDs []uuid.UUID) (map[uuid.UUID]int, error) {
	return db.CountBy(ctx, s.pool, "maven packages", `
		SELECT mr.repository_id, count(*)
		FROM maven_repositories mr
		JOIN maven_packages p ON p.namespace_id = $1 AND p.maven_repository_id = mr.id
		WHERE mr.namespace_id = $1 AND mr.repository_id = ANY($2) AND p.soft_deleted_at IS NULL
		GROUP BY mr.repository_id`, nsID, repositoryIDs)
}

// PackagesByIDs loads packages (trash included) by id.
func (s *Store) PackagesByIDs(ctx context.Context, nsID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]*PackageInfo, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+packageColumns+`, mr.repository_id
		FROM maven_packages p
		JOIN maven_repositories mr ON mr.namespace_id = $1 AND mr.id = p.maven_repository_id
		WHERE p.namespace_id = $1 AND p.id = ANY($2)`, nsID, ids)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: load maven packages: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*PackageInfo, error) { return scanPackageInfo(r) })
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: load maven packages: %w", err))
	}
	m := make(map[uuid.UUID]*PackageInfo, len(out))
	for _, p := range out {
		m[p.ID] = p
	}
	return m, nil
}

// Coordinates names an active package of a repository (repositories.id).
type Coordinates struct {
	RepositoryID uuid.UUID
	GroupID      string
	ArtifactID   string
}

// PackagesByCoordinates loads active packages by coordinates.
func (s *Store) PackagesByCoordinates(ctx context.Context, nsID uuid.UUID, cs []Coordinates) (map[Coordinates]*PackageInfo, error) {
	repos, gs, as := make([]uuid.UUID, len(cs)), make([]string, len(cs)), make([]string, len(cs))
	for i, c := range cs {
		repos[i], gs[i], as[i] = c.RepositoryID, c.GroupID, c.ArtifactID
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+packageColumns+`, mr.repository_id
		FROM unnest($2::uuid[], $3::text[], $4::text[]) AS k(repository_id, group_id, artifact_id)
		JOIN maven_repositories mr ON mr.namespace_id = $1 AND mr.repository_id = k.repository_id
		JOIN maven_packages p ON p.namespace_id = $1 AND p.maven_repository_id = mr.id
		                     AND p.group_id = k.group_id AND p.artifact_id = k.artifact_id
		WHERE p.soft_deleted_at IS NULL`, nsID, repos, gs, as)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: maven packages by coordinates: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*PackageInfo, error) { return scanPackageInfo(r) })
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: maven packages by coordinates: %w", err))
	}
	m := make(map[Coordinates]*PackageInfo, len(out))
	for _, p := range out {
		m[Coordinates{RepositoryID: p.RepositoryID, GroupID: p.GroupID, ArtifactID: p.ArtifactID}] = p
	}
	return m, nil
}

// VersionsOfPackages returns, per package id, the first limit+1
// active versions in descending Maven order (ComparableVersion as Maven 3
// sorts: highest first, so 1.10 above 1.9 and 1.0 above 1.0-rc1), after
// afterVersion (nil: from the highest). Maven's order is not expressible
// as an index, so it reads the active versions of the packages in one
// statement (an index range scan each) and orders and pages them in Go.
// Versions Maven deems equal ("1.0", "1.0.0") are ordered by the version
// string, descending, so the order is total and the cursor (a version
// string) is unambiguous, and still resumes right after a delete.
func (s *Store) VersionsOfPackages(ctx context.Context, nsID uuid.UUID, pkgIDs []uuid.UUID, afterVersion *string, limit int) (map[uuid.UUID][]*Artifact, error) {
	all, err := db.GroupBy(ctx, s.pool, "maven versions", `
		SELECT mv.maven_package_id, `+artifactColumns+`
		FROM maven_versions mv
		JOIN maven_packages mp ON mp.namespace_id = $1 AND mp.id = mv.maven_package_id
		JOIN maven_repositories mr ON mr.namespace_id = $1 AND mr.id = mp.maven_repository_id
		WHERE mv.namespace_id = $1 AND mv.maven_package_id = ANY($2) AND mv.soft_deleted_at IS NULL`,
		[]any{nsID, pkgIDs}, scanArtifact)
	if err != nil {
		return nil, err
	}
	type entry struct {
		a  *Artifact
		it *mvItem
	}
	// desc orders a before b when a is the higher version.
	desc := func(a, b *mvItem, av, bv string) int {
		if c := b.compare(a); c != 0 {
			return c
		}
		return strings.Compare(bv, av)
	}
	var after *mvItem
	if afterVersion != nil {
		after = mvParse(*afterVersion)
	}
	for pkg, arts := range all {
		es := make([]entry, len(arts))
		for i, a := range arts {
			es[i] = entry{a, mvParse(a.Version)}
		}
		slices.SortFunc(es, func(a, b entry) int { return desc(a.it, b.it, a.a.Version, b.a.Version) })
		start := 0
		if after != nil {
			start = sort.Search(len(es), func(i int) bool { return desc(es[i].it, after, es[i].a.Version, *afterVersion) > 0 })
		}
		page := make([]*Artifact, 0, min(len(es)-start, limit+1))
		for _, e := range es[start:min(len(es), start+limit+1)] {
			page = append(page, e.a)
		}
		all[pkg] = page
	}
	return all, nil
}

// CountVersionsOfPackages counts active versions per package id.
func (s *Store) CountVersionsOfPackages(ctx context.Context, nsID uuid.UUID, pkgIDs []uuid.UUID) (map[uuid.UUID]int, error) {
	return db.CountBy(ctx, s.pool, "maven versions", `
		SELECT maven_package_id, count(*) FROM maven_versions
		WHERE namespace_id = $1 AND maven_package_id = ANY($2) AND soft_deleted_at IS NULL
		GROUP BY maven_package_id`, nsID, pkgIDs)
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
		JOIN maven_versions mv ON mv.namespace_id = $1 AND mv.maven_package_id = k.package_id AND mv.version = k.version
		JOIN maven_packages mp ON mp.namespace_id = $1 AND mp.id = mv.maven_package_id
		JOIN maven_repositories mr ON mr.namespace_id = $1 AND mr.id = mp.maven_repository_id
		WHERE mv.soft_deleted_at IS NULL`, nsID, pkgs, vs)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: maven versions by name: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Artifact, error) { return scanArtifact(r) })
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: maven versions by name: %w", err))
	}
	m := make(map[VersionName]*Artifact, len(out))
	for _, v := range out {
		m[VersionName{PackageID: v.PackageID, Version: v.Version}] = v
	}
	return m, nil
}

// FilesOfParents returns, per parent, the first limit+1 active files
// by name after afterName: the files of versions (byVersion, parents are
// version ids; maven_files_active_version_file_key) or the package-level
// files of packages (parents are package ids;
// maven_files_active_package_file_key).
func (s *Store) FilesOfParents(ctx context.Context, nsID uuid.UUID, parents []uuid.UUID, byVersion bool, afterName *string, limit int) (map[uuid.UUID][]*FileInfo, error) {
	args := []any{nsID, parents, limit + 1}
	scope := `f.maven_package_id = pk.id AND f.maven_version_id IS NULL`
	parent := `f.maven_package_id`
	if byVersion {
		scope, parent = `f.maven_version_id = pk.id`, `f.maven_version_id`
	}
	if afterName != nil {
		args, scope = append(args, *afterName), scope+` AND f.file_name > $4`
	}
	return db.GroupBy(ctx, s.pool, "maven files", `
		SELECT f.parent, f.id, f.maven_package_id, f.maven_version_id, f.file_name, f.blob_sha256, f.sha1, f.md5, f.sha512, bn.size
		FROM unnest($2::uuid[]) AS pk(id)
		CROSS JOIN LATERAL (
			SELECT `+parent+` AS parent, f.* FROM maven_files f
			WHERE f.namespace_id = $1 AND `+scope+` AND f.soft_deleted_at IS NULL
			ORDER BY f.file_name LIMIT $3) f
		JOIN blob_storage_blobs_by_namespace bn ON bn.namespace_id = $1 AND bn.sha256 = f.blob_sha256
		ORDER BY f.parent, f.file_name`, args, scanFileInfo)
}

func scanFileInfo(r pgx.Row) (*FileInfo, error) {
	var (
		fi                        FileInfo
		sha256, sha1, md5, sha512 []byte
	)
	if err := r.Scan(&fi.ID, &fi.PackageID, &fi.VersionID, &fi.FileName, &sha256, &sha1, &md5, &sha512, &fi.Size); err != nil {
		return nil, err
	}
	if len(sha256) != 32 || len(sha1) != 20 || len(sha512) != 64 || (md5 != nil && len(md5) != 16) {
		return nil, fmt.Errorf("maven file %s has malformed checksums", fi.ID)
	}
	fi.Checksums.SHA256, fi.Checksums.SHA1, fi.Checksums.SHA512 = [32]byte(sha256), [20]byte(sha1), [64]byte(sha512)
	if md5 != nil {
		v := [16]byte(md5)
		fi.Checksums.MD5 = &v
	}
	return &fi, nil
}

// PackagesOfRepositories returns, per repository (repositories.id),
// the first limit+1 active packages by (groupId, artifactId) after the key
// (nil: from the start): one LATERAL range scan of
// maven_packages_active_coordinates_key per repository.
func (s *Store) PackagesOfRepositories(ctx context.Context, nsID uuid.UUID, repositoryIDs []uuid.UUID, after *PackageKey, limit int) (map[uuid.UUID][]*PackageInfo, error) {
	args := []any{nsID, repositoryIDs, limit + 1}
	keyset := ""
	if after != nil {
		args, keyset = append(args, after.GroupID, after.ArtifactID), ` AND (p.group_id, p.artifact_id) > ($4, $5)`
	}
	return db.GroupBy(ctx, s.pool, "maven packages", `
		SELECT mr.repository_id, p.id, p.namespace_id, p.maven_repository_id, p.group_id, p.artifact_id,
		       p.last_downloaded_at, p.soft_deleted_at, mr.repository_id
		FROM maven_repositories mr
		CROSS JOIN LATERAL (
			SELECT p.* FROM maven_packages p
			WHERE p.namespace_id = $1 AND p.maven_repository_id = mr.id AND p.soft_deleted_at IS NULL`+keyset+`
			ORDER BY p.group_id, p.artifact_id LIMIT $3) p
		WHERE mr.namespace_id = $1 AND mr.repository_id = ANY($2)
		ORDER BY mr.repository_id, p.group_id, p.artifact_id`, args, scanPackageInfo)
}

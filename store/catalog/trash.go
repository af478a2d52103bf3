package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/maven"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
	"github.com/google/uuid"
)

// TrashKind is a kind of soft-deleted item.
type TrashKind string

const (
	TrashRepository        TrashKind = "REPOSITORY"
	TrashContainerImage    TrashKind = "CONTAINER_IMAGE"
	TrashContainerManifest TrashKind = "CONTAINER_MANIFEST"
	TrashMavenVersion      TrashKind = "MAVEN_VERSION"
	TrashNpmVersion        TrashKind = "NPM_VERSION"
	TrashMavenPackage      TrashKind = "MAVEN_PACKAGE"
	TrashNpmPackage        TrashKind = "NPM_PACKAGE"
)

// AllTrashKinds lists every kind the trash merges.
var AllTrashKinds = []TrashKind{TrashRepository, TrashContainerImage, TrashContainerManifest, TrashMavenVersion, TrashNpmVersion,
	TrashMavenPackage, TrashNpmPackage}

// trashTables maps a kind to its table; each has the trash index
// (docs/schema.md "Soft delete, trash and purge")
// (namespace_id, soft_deleted_at DESC) WHERE soft_deleted_at IS NOT NULL.
var trashTables = map[TrashKind]string{
	TrashRepository:        "repositories",
	TrashContainerImage:    "container_images",
	TrashContainerManifest: "container_manifests",
	TrashMavenVersion:      "maven_versions",
	TrashNpmVersion:        "npm_versions",
	TrashMavenPackage:      "maven_packages",
	TrashNpmPackage:        "npm_packages",
}

// TrashKey is the keyset position in the trash: deletion time, then id
// (UUIDv7 ids are unique across tables, so the merged order is total).
type TrashKey struct {
	DeletedAt time.Time `json:"t"`
	ID        uuid.UUID `json:"i"`
}

// TrashEntry is one soft-deleted item; exactly one of the pointers is set.
type TrashEntry struct {
	Kind      TrashKind
	ID        uuid.UUID
	DeletedAt time.Time
	// DeletedBy is who or what moved the item to the trash
	// ("policy:<id>", "admin:<user>", "token:<id>"); nil: unknown.
	DeletedBy  *string
	Repository *store.Repository
	Image      *container.Image
	Manifest   *container.Manifest
	Maven      *maven.Artifact
	Npm        *npmstore.Artifact
	// MavenPackage and NpmPackage: a package in the trash. An npm package
	// goes with its versions (each listed too); a Maven package alone.
	MavenPackage *maven.PackageInfo
	NpmPackage   *npmstore.Package
}

// Key is the entry's keyset position.
func (e *TrashEntry) Key() TrashKey { return TrashKey{DeletedAt: e.DeletedAt, ID: e.ID} }

// ListTrash returns the most recently deleted items of the given kinds
// (all when empty), newest first, after the key. Each kind is one
// LIMITed range scan of its trash index; the arms are merged with
// UNION ALL and cut to the page, then the rows are loaded by id.
func (s *Store) ListTrash(ctx context.Context, nsID uuid.UUID, kinds []TrashKind, after *TrashKey, limit int) ([]*TrashEntry, bool, error) {
	return s.ListTrashPage(ctx, nsID, kinds, after, limit, false)
}

// ListTrashPage is ListTrash in either direction. Backward, it returns the
// limit items deleted just after the key (those listed before it),
// still newest first, and whether even newer ones exist: the same
// trash indexes walked the other way.
func (s *Store) ListTrashPage(ctx context.Context, nsID uuid.UUID, kinds []TrashKind, key *TrashKey, limit int, backward bool) ([]*TrashEntry, bool, error) {
	if len(kinds) == 0 {
		kinds = AllTrashKinds
	}
	cmp, dir := "<", "DESC"
	if backward {
		cmp, dir = ">", "ASC"
	}
	args := []any{nsID, limit + 1}
	keyset := ""
	if key != nil {
		args = append(args, key.DeletedAt, key.ID)
		keyset = " AND ROW(soft_deleted_at, id) " + cmp + " ROW($3, $4)"
	}
	arms := make([]string, 0, len(kinds))
	for _, k := range kinds {
		table, ok := trashTables[k]
		if !ok {
			return nil, false, errs.New(store.CodeInvalidInput, "unknown trash kind %q", k)
		}
		arms = append(arms, fmt.Sprintf(`(SELECT '%s' AS kind, id, soft_deleted_at, soft_deleted_by FROM %s
			WHERE namespace_id = $1 AND soft_deleted_at IS NOT NULL%s
			ORDER BY soft_deleted_at %s, id %s LIMIT $2)`, k, table, keyset, dir, dir))
	}
	rows, err := s.pool.Query(ctx, `SELECT kind, id, soft_deleted_at, soft_deleted_by FROM (`+strings.Join(arms, " UNION ALL ")+
		`) t ORDER BY soft_deleted_at `+dir+`, id `+dir+` LIMIT $2`, args...)
	if err != nil {
		return nil, false, fmt.Errorf("list trash: %w", err)
	}
	var entries []*TrashEntry
	for rows.Next() {
		var e TrashEntry
		var kind string
		if err := rows.Scan(&kind, &e.ID, &e.DeletedAt, &e.DeletedBy); err != nil {
			rows.Close()
			return nil, false, fmt.Errorf("list trash: %w", err)
		}
		e.Kind = TrashKind(kind)
		entries = append(entries, &e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("list trash: %w", err)
	}
	more := len(entries) > limit
	if more {
		entries = entries[:limit]
	}
	if backward {
		slices.Reverse(entries)
	}
	ids := map[TrashKind][]uuid.UUID{}
	for _, e := range entries {
		ids[e.Kind] = append(ids[e.Kind], e.ID)
	}
	repos := map[uuid.UUID]*store.Repository{}
	images := map[uuid.UUID]*container.Image{}
	if len(ids[TrashRepository]) > 0 {
		rs, err := s.core.RepositoriesByIDs(ctx, nsID, ids[TrashRepository])
		if err != nil {
			return nil, false, err
		}
		for _, r := range rs {
			repos[r.ID] = r
		}
	}
	if len(ids[TrashContainerImage]) > 0 {
		is, err := s.container.ImagesByIDs(ctx, nsID, ids[TrashContainerImage])
		if err != nil {
			return nil, false, err
		}
		for _, i := range is {
			images[i.ID] = i
		}
	}
	l, err := s.loadArtifacts(ctx, nsID, ids[TrashContainerManifest], ids[TrashMavenVersion], ids[TrashNpmVersion])
	if err != nil {
		return nil, false, err
	}
	mavenPkgs, npmPkgs, err := s.loadTrashedPackages(ctx, nsID, ids[TrashMavenPackage], ids[TrashNpmPackage])
	if err != nil {
		return nil, false, err
	}
	out := entries[:0]
	for _, e := range entries {
		switch e.Kind {
		case TrashRepository:
			e.Repository = repos[e.ID]
		case TrashContainerImage:
			e.Image = images[e.ID]
		case TrashContainerManifest:
			e.Manifest = l.manifests[e.ID]
		case TrashMavenVersion:
			e.Maven = l.maven[e.ID]
		case TrashNpmVersion:
			e.Npm = l.npm[e.ID]
		case TrashMavenPackage:
			e.MavenPackage = mavenPkgs[e.ID]
		case TrashNpmPackage:
			e.NpmPackage = npmPkgs[e.ID]
		}
		// A row purged between the two reads is left out.
		if e.Repository != nil || e.Image != nil || e.Manifest != nil || e.Maven != nil || e.Npm != nil ||
			e.MavenPackage != nil || e.NpmPackage != nil {
			out = append(out, e)
		}
	}
	return out, more, nil
}

// loadTrashedPackages loads the package entries of a trash page by id.
func (s *Store) loadTrashedPackages(ctx context.Context, nsID uuid.UUID, mavenIDs, npmIDs []uuid.UUID) (map[uuid.UUID]*maven.PackageInfo, map[uuid.UUID]*npmstore.Package, error) {
	var (
		mvn = map[uuid.UUID]*maven.PackageInfo{}
		npm = map[uuid.UUID]*npmstore.Package{}
		err error
	)
	if len(mavenIDs) > 0 {
		if mvn, err = s.maven.PackagesByIDs(ctx, nsID, mavenIDs); err != nil {
			return nil, nil, err
		}
	}
	if len(npmIDs) > 0 {
		if npm, err = s.npm.PackagesByIDs(ctx, nsID, npmIDs); err != nil {
			return nil, nil, err
		}
	}
	return mvn, npm, nil
}

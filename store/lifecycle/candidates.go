package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// Kind is the kind of an item a policy deletes.
type Kind string

const (
	KindContainerManifest  Kind = "CONTAINER_MANIFEST"
	KindNpmVersion         Kind = "NPM_VERSION"
	KindMavenVersion       Kind = "MAVEN_VERSION"
	KindMavenSnapshotBuild Kind = "MAVEN_SNAPSHOT_BUILD"
)

// Options tunes the walks. Zero values take the defaults.
type Options struct {
	// PageSize is the candidate rows one keyset statement reads.
	PageSize int
	// MaxDeletesPerRun bounds the deletions of one repository per run; a
	// run that stops there leaves the rest to the next run.
	MaxDeletesPerRun int
	// NpmHook is the npm write hook (the packument rebuild) that npm
	// deletions run, as the protocol's own unpublish does.
	NpmHook NpmHook
}

// Defaults of Options.
const (
	DefaultPageSize         = 2000
	DefaultMaxDeletesPerRun = 10000
)

func (o Options) withDefaults() Options {
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.MaxDeletesPerRun <= 0 {
		o.MaxDeletesPerRun = DefaultMaxDeletesPerRun
	}
	return o
}

// pageKey is the keyset position of a walk: group, then push time and id
// descending within the group.
type pageKey struct {
	group     uuid.UUID
	createdAt time.Time
	id        uuid.UUID
}

// farFuture starts a walk: every row is older.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// The walk statements. Each reads one page of a repository's active
// candidates in (group, created_at DESC, id DESC) order; $3-$5 are the last
// row of the previous page. The keyset is two arms, each a bounded index
// walk: the rest of the current group (a range of the *_lifecycle_idx
// index), then the groups after it, in id order, each read newest first
// and at most a page of it (a LATERAL join, so a later group is never
// scanned past what the page needs).
func walkSQL(groups, rows, sel string) string {
	arm := func(op, keyset string) string {
		return `(SELECT ` + sel + ` FROM (` + groups + ` AND g.id ` + op + ` $3 ORDER BY g.id LIMIT $6) g
		CROSS JOIN LATERAL (` + rows + keyset + ` ORDER BY r.created_at DESC, r.id DESC LIMIT $6) r
		ORDER BY 1, 5 DESC, 3 DESC LIMIT $6)`
	}
	return arm("=", ` AND (r.created_at, r.id) < ($4, $5)`) + "\n\t\tUNION ALL\n\t\t" + arm(">", "") +
		"\n\t\tORDER BY 1, 5 DESC, 3 DESC LIMIT $6"
}

var (
	containerPageSQL = walkSQL(
		`SELECT g.id, g.name, g.last_downloaded_at FROM container_repositories cr
		JOIN container_images g ON g.namespace_id = $1 AND g.container_repository_id = cr.id AND g.soft_deleted_at IS NULL
		WHERE cr.namespace_id = $1 AND cr.repository_id = $2`,
		`SELECT r.id, r.digest, r.created_at, r.size,
		       ARRAY(SELECT t.name FROM container_tags t
		             WHERE t.namespace_id = $1 AND t.container_manifest_id = r.id ORDER BY t.name LIMIT 1000) AS tags
		FROM container_manifests r
		WHERE r.namespace_id = $1 AND r.container_image_id = g.id AND r.soft_deleted_at IS NULL
		  AND NOT EXISTS (
		    SELECT 1 FROM container_manifest_relationships rel
		    JOIN container_manifests p ON p.namespace_id = $1 AND p.id = rel.parent_container_manifest_id
		    WHERE rel.namespace_id = $1 AND rel.child_container_manifest_id = r.id AND p.soft_deleted_at IS NULL)`,
		`g.id, g.name, r.id, r.digest, r.created_at, r.size, g.last_downloaded_at, r.tags`)
	npmPageSQL = walkSQL(
		`SELECT g.id, g.name FROM npm_repositories nr
		JOIN npm_packages g ON g.namespace_id = $1 AND g.npm_repository_id = nr.id AND g.soft_deleted_at IS NULL
		WHERE nr.namespace_id = $1 AND nr.repository_id = $2`,
		`SELECT r.id, r.version, r.created_at, r.size_bytes, r.last_downloaded_at,
		       EXISTS (SELECT 1 FROM npm_tags t WHERE t.namespace_id = $1 AND t.npm_package_id = g.id
		               AND t.npm_version_id = r.id AND t.name = 'latest') AS latest
		FROM npm_versions r
		WHERE r.namespace_id = $1 AND r.npm_package_id = g.id AND r.soft_deleted_at IS NULL`,
		`g.id, g.name, r.id, r.version, r.created_at, r.size_bytes, r.last_downloaded_at, r.latest`)
	mavenPageSQL = walkSQL(
		`SELECT g.id, g.group_id || ':' || g.artifact_id AS name, g.artifact_id FROM maven_repositories mr
		JOIN maven_packages g ON g.namespace_id = $1 AND g.maven_repository_id = mr.id AND g.soft_deleted_at IS NULL
		WHERE mr.namespace_id = $1 AND mr.repository_id = $2`,
		`SELECT r.id, r.version, r.created_at, r.size_bytes, r.last_downloaded_at
		FROM maven_versions r
		WHERE r.namespace_id = $1 AND r.maven_package_id = g.id AND r.soft_deleted_at IS NULL`,
		`g.id, g.name, r.id, r.version, r.created_at, r.size_bytes, r.last_downloaded_at, g.artifact_id`)
)

// row is one candidate as a page reads it, with what deleting it needs.
type row struct {
	Candidate
	artifactID string // Maven: for the SNAPSHOT file names
}

// kindOf is the item kind of a repository's candidates ("" when the
// format has no lifecycle).
func kindOf(repo *store.Repository) Kind {
	switch {
	case repo.IsContainer():
		return KindContainerManifest
	case repo.Format == enum.FormatNpm:
		return KindNpmVersion
	case repo.Format == enum.FormatMaven:
		return KindMavenVersion
	}
	return ""
}

// page reads one page of a repository's candidates after key.
func (s *Store) page(ctx context.Context, repo *store.Repository, key pageKey) ([]row, error) {
	var sql string
	switch kindOf(repo) {
	case KindContainerManifest:
		sql = containerPageSQL
	case KindNpmVersion:
		sql = npmPageSQL
	case KindMavenVersion:
		sql = mavenPageSQL
	default:
		return nil, nil
	}
	// Described, not prepared (as store/npm's statements): every execution
	// is planned with its namespace, so it prunes to one partition of each
	// 64-partition table, where the cached generic plan a walk of many
	// pages would switch to keeps all of them (PostgreSQL 15).
	rows, err := s.pool.Query(ctx, sql, pgx.QueryExecModeCacheDescribe,
		repo.NamespaceID, repo.ID, key.group, key.createdAt, key.id, s.opts.PageSize)
	if err != nil {
		return nil, fmt.Errorf("lifecycle: candidates of %s: %w", repo.Name, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var c row
		switch kindOf(repo) {
		case KindContainerManifest:
			var (
				digest []byte
				tags   []string
			)
			err := r.Scan(&c.Group, &c.GroupName, &c.ID, &digest, &c.CreatedAt, &c.SizeBytes, &c.LastDownloadedAt, &tags)
			c.Label, c.Names = store.FormatDigest(digest), tags
			return c, err
		case KindNpmVersion:
			err := r.Scan(&c.Group, &c.GroupName, &c.ID, &c.Label, &c.CreatedAt, &c.SizeBytes, &c.LastDownloadedAt, &c.Pinned)
			c.Names = []string{c.Label}
			return c, err
		default:
			err := r.Scan(&c.Group, &c.GroupName, &c.ID, &c.Label, &c.CreatedAt, &c.SizeBytes, &c.LastDownloadedAt, &c.artifactID)
			c.Names = []string{c.Label}
			return c, err
		}
	})
	if err != nil {
		return nil, fmt.Errorf("lifecycle: candidates of %s: %w", repo.Name, err)
	}
	return out, nil
}

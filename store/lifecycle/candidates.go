package lifecycle

import (
	"context"
	"fmt"
	"strings"
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
// row of the previous page. The keyset is two arms so that each is a plain
// index range: the rest of the current group (a range of the
// *_lifecycle_idx index) and the groups after it.
func walkSQL(sel, from, where, group, order string) string {
	return `(SELECT ` + sel + ` FROM ` + from + ` WHERE ` + where + ` AND ` + group + ` = $3 AND (` + order + `) < ($4, $5)
		ORDER BY ` + descending(order) + ` LIMIT $6)
		UNION ALL
		(SELECT ` + sel + ` FROM ` + from + ` WHERE ` + where + ` AND ` + group + ` > $3
		ORDER BY ` + group + `, ` + descending(order) + ` LIMIT $6)
		ORDER BY 1, 5 DESC, 3 DESC LIMIT $6`
}

func descending(order string) string {
	parts := strings.Split(order, ", ")
	for i := range parts {
		parts[i] += " DESC"
	}
	return strings.Join(parts, ", ")
}

var (
	containerPageSQL = walkSQL(`ci.id, ci.name, cm.id, cm.digest, cm.created_at, cm.size, ci.last_downloaded_at,
		       ARRAY(SELECT t.name FROM container_tags t
		             WHERE t.namespace_id = $1 AND t.container_manifest_id = cm.id ORDER BY t.name LIMIT 1000)`,
		`container_repositories cr
		JOIN container_images ci ON ci.namespace_id = $1 AND ci.container_repository_id = cr.id AND ci.soft_deleted_at IS NULL
		JOIN container_manifests cm ON cm.namespace_id = $1 AND cm.container_image_id = ci.id AND cm.soft_deleted_at IS NULL`,
		`cr.namespace_id = $1 AND cr.repository_id = $2
		  AND NOT EXISTS (
		    SELECT 1 FROM container_manifest_relationships rel
		    JOIN container_manifests p ON p.namespace_id = $1 AND p.id = rel.parent_container_manifest_id
		    WHERE rel.namespace_id = $1 AND rel.child_container_manifest_id = cm.id AND p.soft_deleted_at IS NULL)`,
		`ci.id`, `cm.created_at, cm.id`)
	npmPageSQL = walkSQL(`p.id, p.name, v.id, v.version, v.created_at, v.size_bytes, v.last_downloaded_at,
		       EXISTS (SELECT 1 FROM npm_tags t WHERE t.namespace_id = $1 AND t.npm_package_id = p.id
		               AND t.npm_version_id = v.id AND t.name = 'latest')`,
		`npm_repositories nr
		JOIN npm_packages p ON p.namespace_id = $1 AND p.npm_repository_id = nr.id AND p.soft_deleted_at IS NULL
		JOIN npm_versions v ON v.namespace_id = $1 AND v.npm_package_id = p.id AND v.soft_deleted_at IS NULL`,
		`nr.namespace_id = $1 AND nr.repository_id = $2`, `p.id`, `v.created_at, v.id`)
	mavenPageSQL = walkSQL(`p.id, p.group_id || ':' || p.artifact_id, v.id, v.version, v.created_at, v.size_bytes, v.last_downloaded_at,
		       p.artifact_id`,
		`maven_repositories mr
		JOIN maven_packages p ON p.namespace_id = $1 AND p.maven_repository_id = mr.id AND p.soft_deleted_at IS NULL
		JOIN maven_versions v ON v.namespace_id = $1 AND v.maven_package_id = p.id AND v.soft_deleted_at IS NULL`,
		`mr.namespace_id = $1 AND mr.repository_id = $2`, `p.id`, `v.created_at, v.id`)
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
	rows, err := s.pool.Query(ctx, sql, repo.NamespaceID, repo.ID, key.group, key.createdAt, key.id, s.opts.PageSize)
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

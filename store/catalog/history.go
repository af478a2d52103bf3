package catalog

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/maven"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
	"github.com/google/uuid"
)

// HistoryKey is the keyset position in the publish history: publish time,
// then id (UUIDv7 ids are unique across tables, so the merged order is
// total).
type HistoryKey struct {
	CreatedAt time.Time `json:"t"`
	ID        uuid.UUID `json:"i"`
}

// PublishKind names the table a publish event comes from.
type PublishKind string

const (
	PublishContainerManifest PublishKind = "CONTAINER_MANIFEST"
	PublishMavenVersion      PublishKind = "MAVEN_VERSION"
	PublishNpmVersion        PublishKind = "NPM_VERSION"
	// A remote repository cached them from its upstream.
	CachedContainerManifest PublishKind = "CACHED_CONTAINER_MANIFEST"
	CachedMavenVersion      PublishKind = "CACHED_MAVEN_VERSION"
	CachedNpmVersion        PublishKind = "CACHED_NPM_VERSION"
)

// PublishEvent is one published or cached artifact; exactly one pointer
// is set.
type PublishEvent struct {
	Kind      PublishKind
	ID        uuid.UUID
	CreatedAt time.Time
	Manifest  *container.Manifest
	Maven     *maven.Artifact
	Npm       *npmstore.Artifact
	Cached    *CachedArtifact
}

// CachedArtifact is what a remote repository cached: a manifest of an
// image, a Maven version or an npm version.
type CachedArtifact struct {
	ID           uuid.UUID
	RepositoryID uuid.UUID
	// Name is the image's upstream name, groupId:artifactId or the npm
	// package name.
	Name string
	// Version is the Maven or npm version, or the manifest's digest
	// (sha256:<hex>).
	Version string
}

// Key is the event's keyset position.
func (e *PublishEvent) Key() HistoryKey { return HistoryKey{CreatedAt: e.CreatedAt, ID: e.ID} }

// RepositoryID is the repository the artifact was published to.
func (e *PublishEvent) RepositoryID() uuid.UUID {
	switch {
	case e.Manifest != nil:
		return e.Manifest.RepositoryID
	case e.Maven != nil:
		return e.Maven.RepositoryID
	case e.Npm != nil:
		return e.Npm.RepositoryID
	case e.Cached != nil:
		return e.Cached.RepositoryID
	}
	return uuid.Nil
}

var historyTables = []struct {
	kind  PublishKind
	table string
}{
	{PublishContainerManifest, "container_manifests"},
	{PublishMavenVersion, "maven_versions"},
	{PublishNpmVersion, "npm_versions"},
	{CachedContainerManifest, "container_remote_manifests"},
	{CachedMavenVersion, "maven_remote_versions"},
	{CachedNpmVersion, "npm_remote_versions"},
}

// PublishHistory returns artifacts published in [from, to) (nil: open) —
// container manifests, Maven and npm versions — and those a remote
// repository cached from its upstream in that time (cached manifests and
// versions, at the time they were first cached; evicted ones are gone),
// newest first, after the key, soft-deleted ones included (a publish event
// is not erased by a delete). Each arm is a LIMITed range scan of its table's unconditional
// (namespace_id, created_at DESC) index; the arms are merged with UNION ALL
// and cut to the page, then the rows are loaded by id.
func (s *Store) PublishHistory(ctx context.Context, nsID uuid.UUID, from, to *time.Time, after *HistoryKey, limit int) ([]*PublishEvent, bool, error) {
	args := []any{nsID, limit + 1}
	where := "namespace_id = $1"
	if from != nil {
		args = append(args, *from)
		where += fmt.Sprintf(" AND created_at >= $%d", len(args))
	}
	if to != nil {
		args = append(args, *to)
		where += fmt.Sprintf(" AND created_at < $%d", len(args))
	}
	if after != nil {
		args = append(args, after.CreatedAt, after.ID)
		where += fmt.Sprintf(" AND ROW(created_at, id) < ROW($%d, $%d)", len(args)-1, len(args))
	}
	arms := make([]string, 0, len(historyTables))
	for _, t := range historyTables {
		arms = append(arms, fmt.Sprintf(`(SELECT '%s' AS kind, id, created_at FROM %s WHERE %s
			ORDER BY created_at DESC, id DESC LIMIT $2)`, t.kind, t.table, where))
	}
	rows, err := s.pool.Query(ctx, `SELECT kind, id, created_at FROM (`+strings.Join(arms, " UNION ALL ")+
		`) h ORDER BY created_at DESC, id DESC LIMIT $2`, args...)
	if err != nil {
		return nil, false, fmt.Errorf("publish history: %w", err)
	}
	var events []*PublishEvent
	for rows.Next() {
		var e PublishEvent
		var kind string
		if err := rows.Scan(&kind, &e.ID, &e.CreatedAt); err != nil {
			rows.Close()
			return nil, false, fmt.Errorf("publish history: %w", err)
		}
		e.Kind = PublishKind(kind)
		events = append(events, &e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("publish history: %w", err)
	}
	more := len(events) > limit
	if more {
		events = events[:limit]
	}
	ids := map[PublishKind][]uuid.UUID{}
	for _, e := range events {
		ids[e.Kind] = append(ids[e.Kind], e.ID)
	}
	l, err := s.loadArtifacts(ctx, nsID, ids[PublishContainerManifest], ids[PublishMavenVersion], ids[PublishNpmVersion])
	if err != nil {
		return nil, false, err
	}
	cached, err := s.loadCached(ctx, nsID, ids[CachedContainerManifest], ids[CachedMavenVersion], ids[CachedNpmVersion])
	if err != nil {
		return nil, false, err
	}
	out := events[:0]
	for _, e := range events {
		e.Manifest, e.Maven, e.Npm, e.Cached = l.manifests[e.ID], l.maven[e.ID], l.npm[e.ID], cached[e.ID]
		if e.Manifest != nil || e.Maven != nil || e.Npm != nil || e.Cached != nil { // purged or evicted in between: left out
			out = append(out, e)
		}
	}
	return out, more, nil
}

type loadedArtifacts struct {
	manifests map[uuid.UUID]*container.Manifest
	maven     map[uuid.UUID]*maven.Artifact
	npm       map[uuid.UUID]*npmstore.Artifact
}

// loadArtifacts loads manifests and Maven and npm versions by id, one
// query per non-empty kind.
func (s *Store) loadArtifacts(ctx context.Context, nsID uuid.UUID, manifestIDs, mavenIDs, npmIDs []uuid.UUID) (*loadedArtifacts, error) {
	l := &loadedArtifacts{map[uuid.UUID]*container.Manifest{}, map[uuid.UUID]*maven.Artifact{}, map[uuid.UUID]*npmstore.Artifact{}}
	if len(manifestIDs) > 0 {
		ms, err := s.container.ManifestsByIDs(ctx, nsID, manifestIDs)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			l.manifests[m.ID] = m
		}
	}
	if len(mavenIDs) > 0 {
		vs, err := s.maven.ArtifactsByIDs(ctx, nsID, mavenIDs)
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			l.maven[v.ID] = v
		}
	}
	if len(npmIDs) > 0 {
		vs, err := s.npm.ArtifactsByIDs(ctx, nsID, npmIDs)
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			l.npm[v.ID] = v
		}
	}
	return l, nil
}

// loadCached loads cached manifests and Maven and npm versions by id with
// their repository and names, one query per non-empty kind.
func (s *Store) loadCached(ctx context.Context, nsID uuid.UUID, manifestIDs, mavenIDs, npmIDs []uuid.UUID) (map[uuid.UUID]*CachedArtifact, error) {
	out := map[uuid.UUID]*CachedArtifact{}
	queries := []struct {
		ids []uuid.UUID
		sql string
	}{
		{manifestIDs, `SELECT x.id, cr.repository_id, ci.name, 'sha256:' || encode(x.digest, 'hex')
			FROM container_remote_manifests x
			JOIN container_remote_images ci ON ci.namespace_id = x.namespace_id AND ci.id = x.container_remote_image_id
			JOIN container_remote_repositories cr ON cr.namespace_id = ci.namespace_id AND cr.id = ci.container_remote_repository_id
			WHERE x.namespace_id = $1 AND ci.namespace_id = $1 AND cr.namespace_id = $1 AND x.id = ANY($2)`},
		{mavenIDs, `SELECT x.id, mr.repository_id, mp.group_id || ':' || mp.artifact_id, x.version
			FROM maven_remote_versions x
			JOIN maven_remote_packages mp ON mp.namespace_id = x.namespace_id AND mp.id = x.maven_remote_package_id
			JOIN maven_remote_repositories mr ON mr.namespace_id = mp.namespace_id AND mr.id = mp.maven_remote_repository_id
			WHERE x.namespace_id = $1 AND mp.namespace_id = $1 AND mr.namespace_id = $1 AND x.id = ANY($2)`},
		{npmIDs, `SELECT x.id, nr.repository_id, np.name, x.version
			FROM npm_remote_versions x
			JOIN npm_remote_packages np ON np.namespace_id = x.namespace_id AND np.id = x.npm_remote_package_id
			JOIN npm_remote_repositories nr ON nr.namespace_id = np.namespace_id AND nr.id = np.npm_remote_repository_id
			WHERE x.namespace_id = $1 AND np.namespace_id = $1 AND nr.namespace_id = $1 AND x.id = ANY($2)`},
	}
	for _, q := range queries {
		if len(q.ids) == 0 {
			continue
		}
		rows, err := s.pool.Query(ctx, q.sql, nsID, q.ids)
		if err != nil {
			return nil, fmt.Errorf("cached artifacts: %w", err)
		}
		for rows.Next() {
			var c CachedArtifact
			if err := rows.Scan(&c.ID, &c.RepositoryID, &c.Name, &c.Version); err != nil {
				rows.Close()
				return nil, fmt.Errorf("cached artifacts: %w", err)
			}
			out[c.ID] = &c
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("cached artifacts: %w", err)
		}
	}
	return out, nil
}

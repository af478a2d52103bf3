package store

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
)

// npm data path of hosted npm repositories (ADR-007 npm_packages,
// npm_versions, npm_tags, npm_files, npm_metadata_files): the operations the
// npm registry protocol calls. Every query carries namespace_id = $1 so it
// prunes to one partition. Writers take the package row lock first
// (FOR SHARE for publishes and tag changes, FOR NO KEY UPDATE for changes
// checked against a document revision), force-expire the package's
// metadata files in the same transaction, and may enqueue a background
// rebuild through their NpmWriteHook. Rebuilds (NpmRebuildMetadata) build
// outside any lock, then lock the package row FOR NO KEY UPDATE, check that
// the package state has not changed since they read it, and swap the
// metadata files and their attachments in one transaction.

// Typed errors of the npm data path. Protocols test them with errors.Is.
var (
	// CodeNpmRepositoryUnknown: no such namespace (or deleted), or no active
	// hosted npm repository of that name in it.
	CodeNpmRepositoryUnknown = Code{Name: "NPM_REPOSITORY_UNKNOWN", Kind: KindNotFound}
	// CodeNpmPackageUnknown: no active package of that name (or one without
	// any active version).
	CodeNpmPackageUnknown = Code{Name: "NPM_PACKAGE_UNKNOWN", Kind: KindNotFound}
	// CodeNpmVersionUnknown: no active version of that package.
	CodeNpmVersionUnknown = Code{Name: "NPM_VERSION_UNKNOWN", Kind: KindNotFound}
	// CodeNpmFileUnknown: no such tarball.
	CodeNpmFileUnknown = Code{Name: "NPM_FILE_UNKNOWN", Kind: KindNotFound}
	// CodeNpmTagUnknown: no such dist-tag.
	CodeNpmTagUnknown = Code{Name: "NPM_TAG_UNKNOWN", Kind: KindNotFound}
	// CodeNpmVersionExists: the version is published.
	CodeNpmVersionExists = Code{Name: "NPM_VERSION_EXISTS", Kind: KindAlreadyExists}
	// CodeNpmVersionUnpublished: the version was published and unpublished;
	// a version string is never reused.
	CodeNpmVersionUnpublished = Code{Name: "NPM_VERSION_UNPUBLISHED", Kind: KindConflict}
	// CodeNpmLimit: an ADR-004 per-package limit (versions, tags) is reached.
	CodeNpmLimit = Code{Name: "NPM_LIMIT", Kind: KindConflict}
	// CodeNpmRevisionConflict: the document revision the client sent is not
	// the current one (optimistic concurrency on _rev).
	CodeNpmRevisionConflict = Code{Name: "NPM_REVISION_CONFLICT", Kind: KindConflict}
	// CodeNpmInvalid: the data does not satisfy the schema or a registry rule.
	CodeNpmInvalid = Code{Name: "NPM_INVALID", Kind: KindInvalidInput}
)

// ADR-004 per-package limits as ADR-007 applies them to npm (soft-deleted
// versions count).
const (
	MaxNpmVersionsPerPackage = 25000
	MaxNpmTagsPerPackage     = 1000
)

// DefaultNpmPackumentTTL is npm.packument_cache_ttl's default.
const DefaultNpmPackumentTTL = 7 * 24 * time.Hour

// NpmRepository is a resolved /npm/<namespace>/<repository>/ registry.
type NpmRepository struct {
	NamespaceID     uuid.UUID
	NamespaceSlug   string
	RepositoryID    uuid.UUID
	RepositoryName  string
	NpmRepositoryID uuid.UUID
	Visibility      enum.Visibility
	// ServesReads / ServesWrites are ADR-007's serving predicates of the
	// namespace: reads stop when it is blocked or disabled, writes also
	// when it is suspended.
	ServesReads  bool
	ServesWrites bool
	// Condition names the namespace condition that stops reads or writes
	// ("blocked", "disabled", "suspended"), "" when there is none.
	Condition string
}

// NpmPackageRef names one package row.
type NpmPackageRef struct {
	NamespaceID     uuid.UUID
	NpmRepositoryID uuid.UUID
	PackageID       uuid.UUID
	Name            string
}

// NpmWriteHook runs inside a write transaction, after the data change and
// before the commit; the npm protocol enqueues its packument rebuild job
// there (River InsertTx). An error rolls the write back.
type NpmWriteHook func(ctx context.Context, tx pgx.Tx, pkg NpmPackageRef) error

const npmResolveColumns = `
	n.id, n.slug, n.deleted_at IS NOT NULL OR n.purged_at IS NOT NULL,
	n.blocked_at IS NOT NULL, n.disabled_at IS NOT NULL, n.suspended_at IS NOT NULL,
	r.id, r.name, r.format, r.kind, r.visibility, nr.id`

// resolveNpmSQL resolves namespace, repository and npm repository in one
// round trip, on the namespace's partitions of repositories and
// npm_repositories (perPartition): every npm request runs it first.
const resolveNpmSQL = `
SELECT ` + npmResolveColumns + `
FROM namespaces n
LEFT JOIN {repositories} r
       ON r.namespace_id = $1 AND r.name = $2 AND r.soft_deleted_at IS NULL
LEFT JOIN {npm_repositories} nr
       ON nr.namespace_id = $1 AND nr.repository_id = r.id
WHERE n.id = $1`

var resolveNpmPartitionSQL = partition.Statements(resolveNpmSQL, "repositories", "npm_repositories")

const npmRepositoryByIDSQL = `
SELECT ` + npmResolveColumns + `
FROM namespaces n
JOIN npm_repositories nr ON nr.namespace_id = $1 AND nr.id = $2
JOIN repositories r ON r.namespace_id = $1 AND r.id = nr.repository_id AND r.soft_deleted_at IS NULL
WHERE n.id = $1`

// npmNamespaceIDs caches namespace slug -> id per Store. The mapping never
// changes: slugs are unique and immutable, and a purged namespace's slug
// is never reused.
var npmNamespaceIDs sync.Map // npmNamespaceKey -> uuid.UUID

type npmNamespaceKey struct {
	s    *Store
	slug string
}

// npmNamespaceID returns the id of a namespace slug (cached).
func (s *Store) npmNamespaceID(ctx context.Context, slug string) (uuid.UUID, error) {
	key := npmNamespaceKey{s, slug}
	if id, ok := npmNamespaceIDs.Load(key); ok {
		return id.(uuid.UUID), nil
	}
	var id uuid.UUID
	err := s.pool.QueryRow(ctx, `SELECT id FROM namespaces WHERE slug = $1`, npmExecMode, slug).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, errs.New(CodeNpmRepositoryUnknown, "npm repository unknown: namespace %s not found", slug)
	}
	if err != nil {
		return uuid.Nil, db.MapErr(fmt.Errorf("store: resolve namespace %s: %w", slug, err))
	}
	npmNamespaceIDs.Store(key, id)
	return id, nil
}

func scanNpmRepository(row pgx.Row, what string) (*NpmRepository, error) {
	var (
		repo                               NpmRepository
		gone, blocked, disabled, suspended bool
		repoID, npmRepoID                  *uuid.UUID
		repoName                           *string
		format, kind, visibility           *int16
	)
	err := row.Scan(&repo.NamespaceID, &repo.NamespaceSlug, &gone, &blocked, &disabled, &suspended,
		&repoID, &repoName, &format, &kind, &visibility, &npmRepoID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(CodeNpmRepositoryUnknown, "npm repository unknown: %s not found", what)
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: resolve npm repository %s: %w", what, err))
	}
	switch {
	case gone:
		return nil, errs.New(CodeNpmRepositoryUnknown, "npm repository unknown: %s not found", what)
	case repoID == nil:
		return nil, errs.New(CodeNpmRepositoryUnknown, "npm repository unknown: repository %s not found", what)
	case enum.Format(*format) != enum.FormatNpm:
		return nil, errs.New(CodeNpmRepositoryUnknown, "npm repository unknown: repository %s is not an npm repository", what)
	case enum.Kind(*kind) != enum.KindHosted || npmRepoID == nil:
		return nil, errs.New(CodeNpmRepositoryUnknown, "npm repository unknown: repository %s is not a hosted npm repository", what)
	}
	repo.RepositoryID, repo.RepositoryName, repo.NpmRepositoryID = *repoID, *repoName, *npmRepoID
	repo.Visibility = enum.Visibility(*visibility)
	repo.ServesReads = !blocked && !disabled
	repo.ServesWrites = repo.ServesReads && !suspended
	switch {
	case blocked:
		repo.Condition = "blocked"
	case disabled:
		repo.Condition = "disabled"
	case suspended:
		repo.Condition = "suspended"
	}
	return &repo, nil
}

// ResolveNpmRepository resolves /npm/<namespace>/<repository>/: an active
// HOSTED repository of format npm in a namespace that is not deleted.
// Blocked, disabled and suspended namespaces resolve, with ServesReads and
// ServesWrites telling what they allow.
func (s *Store) ResolveNpmRepository(ctx context.Context, namespace, repository string) (*NpmRepository, error) {
	if namespace == "" || repository == "" || len(namespace) > 255 || len(repository) > 255 {
		return nil, errs.New(CodeNpmRepositoryUnknown, "npm repository unknown: %s/%s not found", namespace, repository)
	}
	nsID, err := s.npmNamespaceID(ctx, namespace)
	if err != nil {
		return nil, err
	}
	part, err := partition.Of(ctx, s.pool, nsID)
	if err != nil {
		return nil, err
	}
	repo, err := scanNpmRepository(s.pool.QueryRow(ctx, resolveNpmPartitionSQL[part], pgx.QueryExecModeCacheStatement, nsID, repository),
		namespace+"/"+repository)
	if err != nil && HasCode(err, CodeNpmRepositoryUnknown) {
		var gone bool
		if s.pool.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM namespaces WHERE id = $1)`, npmExecMode, nsID).Scan(&gone) == nil && gone {
			npmNamespaceIDs.Delete(npmNamespaceKey{s, namespace})
		}
	}
	return repo, err
}

// NpmRepositoryByID resolves an npm repository by its npm_repositories id
// (background jobs carry ids, not names).
func (s *Store) NpmRepositoryByID(ctx context.Context, namespaceID, npmRepositoryID uuid.UUID) (*NpmRepository, error) {
	return scanNpmRepository(s.pool.QueryRow(ctx, npmRepositoryByIDSQL, npmExecMode, namespaceID, npmRepositoryID), npmRepositoryID.String())
}

// --- JSON schema of npm_versions.package_json (ADR-007: every jsonb is
// validated against a strict JSON schema before it is written).

//go:embed npm_package_json.schema.json
var npmPackageJSONSchemaSource []byte

var npmPackageJSONSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(npmPackageJSONSchemaSource))
	if err != nil {
		return nil, fmt.Errorf("store: npm package_json schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	const url = "urn:artifact-registry:schema:npm_versions.package_json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("store: npm package_json schema: %w", err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("store: npm package_json schema: %w", err)
	}
	return sch, nil
})

// ValidateNpmPackageJSON validates an npm_versions.package_json document
// against its embedded JSON schema. A failure wraps CodeNpmInvalid.
func ValidateNpmPackageJSON(doc []byte) error {
	sch, err := npmPackageJSONSchema()
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return errs.New(CodeNpmInvalid, "invalid npm data: package.json is not valid JSON: %v", err)
	}
	if err := sch.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return errs.New(CodeNpmInvalid, "invalid npm data: package.json: %s", npmSchemaMessage(ve))
		}
		return errs.New(CodeNpmInvalid, "invalid npm data: package.json: %v", err)
	}
	return nil
}

var npmSchemaPrinter = message.NewPrinter(language.English)

// npmSchemaMessage returns the innermost failure (the most specific one) of
// a validation error as "at /path: message".
func npmSchemaMessage(ve *jsonschema.ValidationError) string {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := "/"
	if len(ve.InstanceLocation) > 0 {
		loc = ""
		for _, p := range ve.InstanceLocation {
			loc += "/" + p
		}
	}
	return fmt.Sprintf("at %s: %s", loc, ve.ErrorKind.LocalizedString(npmSchemaPrinter))
}

// npmCounterDelta is one counter_deltas row (buffered counters, ADR-007).
type npmCounterDelta struct {
	target   enum.CounterTarget
	targetID uuid.UUID
	field    enum.CounterField
	delta    int64
}

// insertNpmCounterDeltas appends buffered counter changes in the caller's
// transaction (no UPDATE of a hot row on the request path).
func insertNpmCounterDeltas(ctx context.Context, tx pgx.Tx, namespaceID uuid.UUID, deltas []npmCounterDelta) error {
	var (
		ids     []uuid.UUID
		targets []int16
		tids    []uuid.UUID
		fields  []int16
		values  []int64
	)
	for _, d := range deltas {
		if d.delta == 0 {
			continue
		}
		ids = append(ids, db.NewID())
		targets = append(targets, int16(d.target))
		tids = append(tids, d.targetID)
		fields = append(fields, int16(d.field))
		values = append(values, d.delta)
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO counter_deltas (id, namespace_id, target, target_id, field, delta)
		SELECT u.id, $1, u.target, u.target_id, u.field, u.delta
		FROM unnest($2::uuid[], $3::smallint[], $4::uuid[], $5::smallint[], $6::bigint[])
		     AS u(id, target, target_id, field, delta)`, npmExecMode,
		namespaceID, ids, targets, tids, fields, values)
	if err != nil {
		return fmt.Errorf("store: npm counter deltas: %w", err)
	}
	return nil
}

// npmExecMode is the query mode of the npm statements on partitioned
// parents: the statement description is cached (one round trip per
// execution), and each execution uses the unnamed prepared statement,
// which PostgreSQL always plans with the actual parameters, so the
// namespace_id = $1 of every statement prunes each partitioned table to
// one partition while planning. A named prepared statement may switch to a
// generic plan, which in PostgreSQL 15 keeps all 64 partitions of each
// table in the plan and locks them at every execution. The statements
// that name single partitions (perPartition) are the exception: they run
// as named prepared statements, on a cached generic plan.
const npmExecMode = pgx.QueryExecModeCacheDescribe

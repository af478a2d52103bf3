package npm

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
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
)

// Store is the npm data path over a core store. It holds no state of its
// own (caches are per core store), so New is cheap and any number of
// Stores may share one core; safe for concurrent use.
type Store struct {
	core *store.Store
	pool *pgxpool.Pool
}

// New returns the npm data path of a core store.
func New(core *store.Store) *Store {
	return &Store{core: core, pool: core.Pool()}
}

// Typed errors of the npm data path. Protocols test them with errors.Is.
var (
	// CodeRepositoryUnknown: no such namespace (or deleted), or no active
	// hosted npm repository of that name in it.
	CodeRepositoryUnknown = store.Code{Name: "NPM_REPOSITORY_UNKNOWN", Kind: store.KindNotFound}
	// CodePackageUnknown: no active package of that name (or one without
	// any active version).
	CodePackageUnknown = store.Code{Name: "NPM_PACKAGE_UNKNOWN", Kind: store.KindNotFound}
	// CodeVersionUnknown: no active version of that package.
	CodeVersionUnknown = store.Code{Name: "NPM_VERSION_UNKNOWN", Kind: store.KindNotFound}
	// CodeFileUnknown: no such tarball.
	CodeFileUnknown = store.Code{Name: "NPM_FILE_UNKNOWN", Kind: store.KindNotFound}
	// CodeTagUnknown: no such dist-tag.
	CodeTagUnknown = store.Code{Name: "NPM_TAG_UNKNOWN", Kind: store.KindNotFound}
	// CodeVersionExists: the version is published.
	CodeVersionExists = store.Code{Name: "NPM_VERSION_EXISTS", Kind: store.KindAlreadyExists}
	// CodeVersionUnpublished: the version was published and unpublished;
	// a version string is never reused.
	CodeVersionUnpublished = store.Code{Name: "NPM_VERSION_UNPUBLISHED", Kind: store.KindConflict}
	// CodeLimit: a per-package limit (versions, tags) is reached
	// (docs/schema.md, Lengths, names and limits).
	CodeLimit = store.Code{Name: "NPM_LIMIT", Kind: store.KindConflict}
	// CodeRevisionConflict: the document revision the client sent is not
	// the current one (optimistic concurrency on _rev).
	CodeRevisionConflict = store.Code{Name: "NPM_REVISION_CONFLICT", Kind: store.KindConflict}
	// CodeInvalid: the data does not satisfy the schema or a registry rule.
	CodeInvalid = store.Code{Name: "NPM_INVALID", Kind: store.KindInvalidInput}
)

// Per-package limits of npm (docs/schema.md, Lengths, names and limits;
// soft-deleted versions count).
const (
	MaxVersionsPerPackage = 25000
	MaxTagsPerPackage     = 1000
)

// DefaultPackumentTTL is npm.packument_cache_ttl's default.
const DefaultPackumentTTL = 7 * 24 * time.Hour

// Repository is a resolved /npm/<namespace>/<repository>/ registry.
type Repository struct {
	NamespaceID     uuid.UUID
	NamespaceSlug   string
	RepositoryID    uuid.UUID
	RepositoryName  string
	NpmRepositoryID uuid.UUID
	Visibility      enum.Visibility
	// ServesReads / ServesWrites are the serving predicates of the
	// namespace (docs/schema.md, Status columns and serving): reads stop when it is blocked or disabled, writes also
	// when it is suspended.
	ServesReads  bool
	ServesWrites bool
	// Condition names the namespace condition that stops reads or writes
	// ("blocked", "disabled", "suspended"), "" when there is none.
	Condition string
	// Remote is set for a pull-through cache (kind REMOTE, resolved by
	// ResolveRegistry only); NpmRepositoryID is then uuid.Nil.
	Remote *RemoteTarget
	// Virtual is set for a virtual repository (kind VIRTUAL, resolved by
	// ResolveRegistry only; its settings come from store.VirtualTree);
	// NpmRepositoryID is then uuid.Nil.
	Virtual bool
}

// PackageRef names one package row.
type PackageRef struct {
	NamespaceID     uuid.UUID
	NpmRepositoryID uuid.UUID
	PackageID       uuid.UUID
	Name            string
}

// WriteHook runs inside a write transaction, after the data change and
// before the commit; the npm protocol enqueues its packument rebuild job
// there (River InsertTx). An error rolls the write back.
type WriteHook func(ctx context.Context, tx pgx.Tx, pkg PackageRef) error

const resolveColumns = `
	n.id, n.slug, n.deleted_at IS NOT NULL OR n.purged_at IS NOT NULL,
	n.blocked_at IS NOT NULL, n.disabled_at IS NOT NULL, n.suspended_at IS NOT NULL,
	r.id, r.name, r.format, r.kind, r.visibility, nr.id,
	nrr.id, nrr.url, nrr.metadata_cache_validity_hours, nrr.settings_changed_at, nrr.wrapped_dek IS NOT NULL`

// resolveSQL resolves namespace, repository and npm repository in one
// round trip, on the namespace's partitions of repositories and
// npm_repositories (perPartition): every npm request runs it first.
const resolveSQL = `
SELECT ` + resolveColumns + `
FROM namespaces n
LEFT JOIN {repositories} r
       ON r.namespace_id = $1 AND r.name = $2 AND r.soft_deleted_at IS NULL
LEFT JOIN {npm_repositories} nr
       ON nr.namespace_id = $1 AND nr.repository_id = r.id
LEFT JOIN {npm_remote_repositories} nrr
       ON nrr.namespace_id = $1 AND nrr.repository_id = r.id
WHERE n.id = $1`

var resolvePartitionSQL = partition.Statements(resolveSQL, "repositories", "npm_repositories", "npm_remote_repositories")

const repositoryByIDSQL = `
SELECT ` + resolveColumns + `
FROM namespaces n
JOIN npm_repositories nr ON nr.namespace_id = $1 AND nr.id = $2
JOIN repositories r ON r.namespace_id = $1 AND r.id = nr.repository_id AND r.soft_deleted_at IS NULL
LEFT JOIN npm_remote_repositories nrr ON false
WHERE n.id = $1`

// resolveNamespaceID returns the id of a namespace slug (cached by the
// core store).
func (s *Store) resolveNamespaceID(ctx context.Context, slug string) (uuid.UUID, error) {
	id, err := s.core.NamespaceID(ctx, slug)
	if store.HasCode(err, store.CodeNotFound) {
		return uuid.Nil, errs.New(CodeRepositoryUnknown, "npm repository unknown: namespace %s not found", slug)
	}
	return id, err
}

// newRemoteTarget is the pull-through settings of an npm remote
// repository as its row holds them.
func newRemoteTarget(id uuid.UUID, url string, metadataValidityHours int16, changed time.Time, hasCredentials bool) *RemoteTarget {
	return &RemoteTarget{ID: id, URL: url, MetadataValidity: time.Duration(metadataValidityHours) * time.Hour,
		SettingsChangedAt: changed, HasCredentials: hasCredentials}
}

func scanRepository(row pgx.Row, what string, allowRemote bool) (*Repository, error) {
	var (
		repo                               Repository
		gone, blocked, disabled, suspended bool
		repoID, npmRepoID, remoteID        *uuid.UUID
		repoName, remoteURL                *string
		format, kind, visibility, metaHrs  *int16
		remoteChanged                      *time.Time
		remoteCreds                        *bool
	)
	err := row.Scan(&repo.NamespaceID, &repo.NamespaceSlug, &gone, &blocked, &disabled, &suspended,
		&repoID, &repoName, &format, &kind, &visibility, &npmRepoID,
		&remoteID, &remoteURL, &metaHrs, &remoteChanged, &remoteCreds)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(CodeRepositoryUnknown, "npm repository unknown: %s not found", what)
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: resolve npm repository %s: %w", what, err))
	}
	switch {
	case gone:
		return nil, errs.New(CodeRepositoryUnknown, "npm repository unknown: %s not found", what)
	case repoID == nil:
		return nil, errs.New(CodeRepositoryUnknown, "npm repository unknown: repository %s not found", what)
	case enum.Format(*format) != enum.FormatNpm:
		return nil, errs.New(CodeRepositoryUnknown, "npm repository unknown: repository %s is not an npm repository", what)
	case allowRemote && enum.Kind(*kind) == enum.KindRemote && remoteID != nil:
		repo.Remote = newRemoteTarget(*remoteID, *remoteURL, *metaHrs, *remoteChanged, *remoteCreds)
	case allowRemote && enum.Kind(*kind) == enum.KindVirtual:
		repo.Virtual = true
	case enum.Kind(*kind) != enum.KindHosted || npmRepoID == nil:
		return nil, errs.New(CodeRepositoryUnknown, "npm repository unknown: repository %s is not a hosted npm repository", what)
	default:
		repo.NpmRepositoryID = *npmRepoID
	}
	repo.RepositoryID, repo.RepositoryName = *repoID, *repoName
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

// ResolveRepository resolves /npm/<namespace>/<repository>/: an active
// HOSTED repository of format npm in a namespace that is not deleted.
// Blocked, disabled and suspended namespaces resolve, with ServesReads and
// ServesWrites telling what they allow.
func (s *Store) ResolveRepository(ctx context.Context, namespace, repository string) (*Repository, error) {
	return s.resolve(ctx, namespace, repository, false)
}

// ResolveRegistry is ResolveRepository that also resolves an npm
// pull-through cache (Repository.Remote set) and an npm virtual
// repository (Repository.Virtual set): what the registry URL serves.
func (s *Store) ResolveRegistry(ctx context.Context, namespace, repository string) (*Repository, error) {
	return s.resolve(ctx, namespace, repository, true)
}

func (s *Store) resolve(ctx context.Context, namespace, repository string, allowRemote bool) (*Repository, error) {
	if namespace == "" || repository == "" || len(namespace) > 255 || len(repository) > 255 {
		return nil, errs.New(CodeRepositoryUnknown, "npm repository unknown: %s/%s not found", namespace, repository)
	}
	nsID, err := s.resolveNamespaceID(ctx, namespace)
	if err != nil {
		return nil, err
	}
	return scanRepository(partition.QueryRow(ctx, s.pool, &resolvePartitionSQL, nsID, repository),
		namespace+"/"+repository, allowRemote)
}

// RepositoryByID resolves an npm repository by its npm_repositories id
// (background jobs carry ids, not names).
func (s *Store) RepositoryByID(ctx context.Context, namespaceID, npmRepositoryID uuid.UUID) (*Repository, error) {
	return scanRepository(s.pool.QueryRow(ctx, repositoryByIDSQL, execMode, namespaceID, npmRepositoryID), npmRepositoryID.String(), false)
}

// --- JSON schema of npm_versions.package_json (every jsonb is
// validated against a strict JSON schema before it is written;
// docs/schema.md, Digests, hashes and enums).

//go:embed package_json.schema.json
var packageJSONSchemaSource []byte

var packageJSONSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(packageJSONSchemaSource))
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

// ValidatePackageJSON validates an npm_versions.package_json document
// against its embedded JSON schema. A failure wraps CodeInvalid.
func ValidatePackageJSON(doc []byte) error {
	sch, err := packageJSONSchema()
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return errs.New(CodeInvalid, "invalid npm data: package.json is not valid JSON: %v", err)
	}
	if err := sch.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return errs.New(CodeInvalid, "invalid npm data: package.json: %s", schemaMessage(ve))
		}
		return errs.New(CodeInvalid, "invalid npm data: package.json: %v", err)
	}
	return nil
}

var schemaPrinter = message.NewPrinter(language.English)

// schemaMessage returns the innermost failure (the most specific one) of
// a validation error as "at /path: message".
func schemaMessage(ve *jsonschema.ValidationError) string {
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
	return fmt.Sprintf("at %s: %s", loc, ve.ErrorKind.LocalizedString(schemaPrinter))
}

// counterDelta is one counter_deltas row (docs/schema.md, Buffered
// counters).
type counterDelta struct {
	target   enum.CounterTarget
	targetID uuid.UUID
	field    enum.CounterField
	delta    int64
}

// insertCounterDeltas appends buffered counter changes in the caller's
// transaction (no UPDATE of a hot row on the request path).
func insertCounterDeltas(ctx context.Context, tx pgx.Tx, namespaceID uuid.UUID, deltas []counterDelta) error {
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
		     AS u(id, target, target_id, field, delta)`, execMode,
		namespaceID, ids, targets, tids, fields, values)
	if err != nil {
		return fmt.Errorf("store: npm counter deltas: %w", err)
	}
	return nil
}

// execMode is the query mode of the npm statements on partitioned
// parents: the statement description is cached (one round trip per
// execution), and each execution uses the unnamed prepared statement,
// which PostgreSQL always plans with the actual parameters, so the
// namespace_id = $1 of every statement prunes each partitioned table to
// one partition while planning. A named prepared statement may switch to a
// generic plan, which in PostgreSQL 15 keeps all 64 partitions of each
// table in the plan and locks them at every execution. The statements
// that name single partitions (perPartition) are the exception: they run
// as named prepared statements, on a cached generic plan.
const execMode = pgx.QueryExecModeCacheDescribe

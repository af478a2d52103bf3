package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// Repository is a repositories row as the management API sees it.
type Repository struct {
	ID             uuid.UUID
	NamespaceID    uuid.UUID
	Name           string
	Description    *string
	Format         enum.Format
	Kind           enum.Kind
	Visibility     enum.Visibility
	ArtifactsCount int64
	DownloadsCount int64
	SizeBytes      int64
	LastUpdatedAt  *time.Time
	CreatedAt      time.Time
	SoftDeletedAt  *time.Time
}

// IsContainer reports whether the repository holds container images.
func (r *Repository) IsContainer() bool {
	return r.Format == enum.FormatDocker || r.Format == enum.FormatOCI
}

const repositoryColumns = `r.id, r.namespace_id, r.name, r.description, r.format, r.kind, r.visibility,
	r.artifacts_count, r.downloads_count, r.size_bytes, r.last_updated_at, r.created_at, r.soft_deleted_at`

func scanRepository(row pgx.Row) (*Repository, error) {
	var r Repository
	var format, kind, visibility int16
	err := row.Scan(&r.ID, &r.NamespaceID, &r.Name, &r.Description, &format, &kind, &visibility,
		&r.ArtifactsCount, &r.DownloadsCount, &r.SizeBytes, &r.LastUpdatedAt, &r.CreatedAt, &r.SoftDeletedAt)
	if err != nil {
		return nil, err
	}
	r.Format, r.Kind, r.Visibility = enum.Format(format), enum.Kind(kind), enum.Visibility(visibility)
	return &r, nil
}

func collectRepositories(rows pgx.Rows) ([]*Repository, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Repository, error) { return scanRepository(r) })
}

// NewRepository describes a repository to create.
type NewRepository struct {
	Namespace   string // slug
	Name        string
	Format      enum.Format
	Kind        enum.Kind
	Visibility  enum.Visibility
	Description *string
	// Child writes the format child row of a repository that is not
	// HOSTED (a remote's upstream settings, a virtual's upstream list),
	// inside the creating transaction, after the parent row; the format
	// package that owns the child table supplies it. HOSTED repositories
	// need none: their child row is the same for every format.
	Child ChildWriter
}

// ChildWriter writes or changes a repository's format child row inside
// the caller's transaction.
type ChildWriter func(ctx context.Context, tx pgx.Tx, ns *Namespace, repo *Repository) error

// CreateRepository creates the parent row, the format child row and the
// link to the namespace's default collection in one transaction. HOSTED
// repositories get their child row here (container_repositories,
// maven_repositories, npm_repositories); other kinds need in.Child, which
// their format package supplies (container.NewRemote for a container
// pull-through cache).
func (s *Store) CreateRepository(ctx context.Context, in NewRepository) (*Repository, error) {
	if err := ValidateRepositoryName("repository", in.Name); err != nil {
		return nil, err
	}
	if in.Description != nil {
		if err := ValidateDescription(*in.Description); err != nil {
			return nil, err
		}
	}
	child := ""
	if in.Child == nil {
		var err error
		if child, err = hostedChildTable(in.Format, in.Kind); err != nil {
			return nil, err
		}
	} else if in.Kind == enum.KindHosted {
		return nil, errs.New(CodeInvalidInput, "a HOSTED repository takes no remote or virtual settings")
	}
	if !db.Lookupable(in.Namespace) {
		return nil, errs.New(CodeNotFound, "namespace %q not found", in.Namespace)
	}
	id := db.NewID()
	childID := db.NewID()
	var repo *Repository
	err := s.WithTx(ctx, func(tx pgx.Tx) error {
		// FOR KEY SHARE: the namespace cannot be purged under us, and its
		// conditions are read consistently with the insert.
		ns, err := namespaceBySlug(ctx, tx, in.Namespace, "FOR KEY SHARE")
		if err != nil {
			return err
		}
		if err := ns.RequireWrites(); err != nil {
			return err
		}
		repo, err = scanRepository(tx.QueryRow(ctx, `
			INSERT INTO repositories AS r (id, namespace_id, name, description, format, kind, visibility)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			RETURNING `+repositoryColumns,
			id, ns.ID, in.Name, in.Description, int16(in.Format), int16(in.Kind), int16(in.Visibility)))
		if err != nil {
			if code, _ := db.PgCode(err); code == pgerrcode.UniqueViolation {
				return errs.New(CodeAlreadyExists,
					"repository %q already exists in namespace %q (names are unique across the trash too)", in.Name, in.Namespace)
			}
			return fmt.Errorf("insert repository: %w", err)
		}
		if in.Child != nil {
			if err := in.Child(ctx, tx, ns, repo); err != nil {
				return err
			}
		} else if _, err := tx.Exec(ctx, `INSERT INTO `+child+` (id, namespace_id, repository_id) VALUES ($1, $2, $3)`,
			childID, ns.ID, id); err != nil {
			return fmt.Errorf("insert %s row: %w", child, err)
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO repository_collection_repositories (namespace_id, repository_collection_id, repository_id)
			SELECT $1, rc.id, $2 FROM repository_collections rc
			WHERE rc.namespace_id = $1 AND rc.is_default`, ns.ID, id)
		if err != nil {
			return fmt.Errorf("link repository to default collection: %w", err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("namespace %s has no default repository collection", ns.ID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return repo, nil
}

// hostedChildTable names the format child table of a hosted repository.
func hostedChildTable(f enum.Format, k enum.Kind) (string, error) {
	switch {
	case k == enum.KindRemote:
		return "", errs.New(CodeInvalidInput, "a REMOTE repository needs its upstream settings (remote: {url, ...})")
	case k == enum.KindVirtual:
		return "", errs.New(CodeInvalidInput, "a VIRTUAL repository needs its upstream list (virtual: {upstreams: [...]})")
	case k != enum.KindHosted:
		return "", errs.New(CodeInvalidInput, "unknown repository kind")
	}
	switch f {
	case enum.FormatDocker, enum.FormatOCI:
		return "container_repositories", nil
	case enum.FormatMaven:
		return "maven_repositories", nil
	case enum.FormatNpm:
		return "npm_repositories", nil
	}
	return "", errs.New(CodeInvalidInput, "unknown repository format %s", formatName(f))
}

func formatName(f enum.Format) string {
	switch f {
	case enum.FormatDocker:
		return "DOCKER"
	case enum.FormatMaven:
		return "MAVEN"
	case enum.FormatNpm:
		return "NPM"
	case enum.FormatOCI:
		return "OCI"
	}
	return strconv.Itoa(int(f))
}

// RepositoryRef names one repository of a namespace: by ID, or by name.
type RepositoryRef struct {
	Namespace string    // slug, always required
	Name      string    // used when ID is uuid.Nil
	ID        uuid.UUID // uuid.Nil: use Name
}

func (ref RepositoryRef) String() string {
	if ref.ID != uuid.Nil {
		return ref.Namespace + "/" + ref.ID.String()
	}
	return ref.Namespace + "/" + ref.Name
}

// LockRepository returns a repository and its namespace inside the
// caller's transaction, with the row lock asked for ("FOR KEY SHARE",
// "FOR UPDATE", ...), for the format packages' own transactions.
func LockRepository(ctx context.Context, tx pgx.Tx, ref RepositoryRef, lock string) (*Namespace, *Repository, error) {
	return resolveRepository(ctx, tx, ref, lock)
}

// resolveRepository locks (lock: "", "FOR UPDATE", ...) and returns the
// repository and its namespace. Trash rows are included; callers decide.
func resolveRepository(ctx context.Context, q db.Queryer, ref RepositoryRef, lock string) (*Namespace, *Repository, error) {
	notFound := errs.New(CodeNotFound, "repository %s not found", ref)
	// The namespace is always named: every query of a partitioned table
	// carries namespace_id, so an id alone would fan out to 64 partitions.
	if !db.Lookupable(ref.Namespace) {
		return nil, nil, errs.New(CodeNotFound, "namespace %q not found", ref.Namespace)
	}
	if ref.ID == uuid.Nil && !db.Lookupable(ref.Name) {
		return nil, nil, notFound
	}
	ns, err := namespaceBySlug(ctx, q, ref.Namespace, "")
	if err != nil {
		return nil, nil, err
	}
	where := `r.namespace_id = $1 AND r.name = $2`
	arg := any(ref.Name)
	if ref.ID != uuid.Nil {
		where, arg = `r.namespace_id = $1 AND r.id = $2`, ref.ID
	}
	repo, err := scanRepository(q.QueryRow(ctx, `SELECT `+repositoryColumns+` FROM repositories r WHERE `+where+` `+lock, ns.ID, arg))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, notFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("load repository %s: %w", ref, err)
	}
	return ns, repo, nil
}

// RepositoryByName returns an active repository and its namespace.
func (s *Store) RepositoryByName(ctx context.Context, namespace, name string) (*Namespace, *Repository, error) {
	ns, repo, err := resolveRepository(ctx, s.pool, RepositoryRef{Namespace: namespace, Name: name}, "")
	if err != nil {
		return nil, nil, err
	}
	if repo.SoftDeletedAt != nil {
		return nil, nil, errs.New(CodeNotFound, "repository %s/%s not found (it is in the trash)", namespace, name)
	}
	return ns, repo, nil
}

// RepositoryByRef returns a repository (trash included) and its namespace.
func (s *Store) RepositoryByRef(ctx context.Context, ref RepositoryRef) (*Namespace, *Repository, error) {
	return resolveRepository(ctx, s.pool, ref, "")
}

// RepositoriesByIDs loads repositories of one namespace by id (trash
// included; missing ids are left out).
func (s *Store) RepositoriesByIDs(ctx context.Context, namespaceID uuid.UUID, ids []uuid.UUID) ([]*Repository, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+repositoryColumns+` FROM repositories r
		WHERE r.namespace_id = $1 AND r.id = ANY($2)`, namespaceID, ids)
	if err != nil {
		return nil, fmt.Errorf("load repositories: %w", err)
	}
	out, err := collectRepositories(rows)
	if err != nil {
		return nil, fmt.Errorf("load repositories: %w", err)
	}
	return out, nil
}

// RepositoryUpdate holds the fields to change; nil leaves a field as is.
type RepositoryUpdate struct {
	Description *string // "" clears it
	Visibility  *enum.Visibility
	// Child changes the format child row (a remote's upstream settings) in
	// the same transaction, after the repository row is locked and
	// checked; its format package supplies it.
	Child ChildWriter
}

// UpdateRepository changes description and/or visibility of an active
// repository.
func (s *Store) UpdateRepository(ctx context.Context, ref RepositoryRef, upd RepositoryUpdate) (*Repository, error) {
	if upd.Description != nil {
		if err := ValidateDescription(*upd.Description); err != nil {
			return nil, err
		}
	}
	if upd.Description == nil && upd.Visibility == nil && upd.Child == nil {
		return nil, errs.New(CodeInvalidInput, "nothing to update: give description and/or visibility")
	}
	var out *Repository
	err := s.WithTx(ctx, func(tx pgx.Tx) error {
		ns, repo, err := resolveRepository(ctx, tx, ref, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		if err := ns.RequireWrites(); err != nil {
			return err
		}
		if repo.SoftDeletedAt != nil {
			return errs.New(CodeConflict, "repository %s is in the trash: restore it first", ref)
		}
		if upd.Child != nil {
			if err := upd.Child(ctx, tx, ns, repo); err != nil {
				return err
			}
			out = repo
		}
		var sets []string
		args := []any{ns.ID, repo.ID}
		if upd.Description != nil {
			args = append(args, *upd.Description)
			sets = append(sets, fmt.Sprintf("description = NULLIF($%d, '')", len(args)))
		}
		if upd.Visibility != nil {
			args = append(args, int16(*upd.Visibility))
			sets = append(sets, fmt.Sprintf("visibility = $%d", len(args)))
		}
		if len(sets) == 0 {
			return nil
		}
		out, err = scanRepository(tx.QueryRow(ctx, `UPDATE repositories AS r SET `+strings.Join(sets, ", ")+`
			WHERE r.namespace_id = $1 AND r.id = $2 RETURNING `+repositoryColumns, args...))
		if err != nil {
			return fmt.Errorf("update repository %s: %w", ref, err)
		}
		return nil
	})
	return out, err
}

// SoftDeleteRepository moves an active repository to the trash.
func (s *Store) SoftDeleteRepository(ctx context.Context, ref RepositoryRef) (*Repository, error) {
	return s.setRepositoryTrash(ctx, ref, true)
}

// RestoreRepository brings a repository back from the trash. Names are
// unique across active and trashed rows, so a restore never collides.
func (s *Store) RestoreRepository(ctx context.Context, ref RepositoryRef) (*Repository, error) {
	return s.setRepositoryTrash(ctx, ref, false)
}

func (s *Store) setRepositoryTrash(ctx context.Context, ref RepositoryRef, trash bool) (*Repository, error) {
	var out *Repository
	err := s.WithTx(ctx, func(tx pgx.Tx) error {
		ns, repo, err := resolveRepository(ctx, tx, ref, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		if err := ns.RequireWrites(); err != nil {
			return err
		}
		set := `soft_deleted_at = now()`
		if trash && repo.SoftDeletedAt != nil {
			return errs.New(CodeConflict, "repository %s is already in the trash", ref)
		}
		if trash {
			// The upstream reference is NO ACTION: the purge would fail
			// later; refuse now, naming what lists it.
			virtuals, err := virtualsListing(ctx, tx, ns.ID, repo.ID)
			if err != nil {
				return err
			}
			if len(virtuals) > 0 {
				return virtualUpstreamConflict(repo.Name, virtuals)
			}
		}
		if !trash {
			if repo.SoftDeletedAt == nil {
				return errs.New(CodeConflict, "repository %s is not in the trash", ref)
			}
			set = `soft_deleted_at = NULL`
		}
		out, err = scanRepository(tx.QueryRow(ctx, `UPDATE repositories AS r SET `+set+`
			WHERE r.namespace_id = $1 AND r.id = $2 RETURNING `+repositoryColumns, ns.ID, repo.ID))
		if err != nil {
			return fmt.Errorf("update repository %s: %w", ref, err)
		}
		return nil
	})
	return out, err
}

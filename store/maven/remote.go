package maven

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/credentials"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// Maven proxies (repositories of format MAVEN and kind REMOTE,
// maven_remote_* tables; docs/remote-repositories.md, "Maven"): their
// settings, credentials, resolution, cached files and eviction. What
// comes from the upstream is the protocol's business (protocol/maven with
// the upstream layer); this file and remote_*.go only read and write the
// cache.

// Limits and defaults of a Maven remote's settings.
const (
	// DefaultRemoteCacheValidityHours is how long a cached release file is
	// trusted without asking the upstream. Release files are immutable and
	// never revalidated, so it is kept for the schema and the API only.
	DefaultRemoteCacheValidityHours = 24
	// DefaultMetadataCacheValidityHours is how long a cached
	// maven-metadata.xml or SNAPSHOT file is served before the upstream is
	// asked again (conditionally).
	DefaultMetadataCacheValidityHours = 1
	// DefaultNegativeCacheMinutes is how long an upstream 404 is
	// remembered.
	DefaultNegativeCacheMinutes = 15
	// MaxNegativeCacheMinutes bounds negative_cache_minutes (a day).
	MaxNegativeCacheMinutes = 1440
)

// CodeRemoteReadOnly: a deploy through a Maven proxy, which only serves
// what its upstream has.
var CodeRemoteReadOnly = store.Code{Name: "MAVEN_REMOTE_READ_ONLY", Kind: store.KindConflict}

// RemoteTarget is what a resolved Maven proxy carries besides the
// Target's common fields.
type RemoteTarget struct {
	// ID is the maven_remote_repositories row.
	ID  uuid.UUID
	URL string
	// MetadataValidity is how long a cached maven-metadata.xml or SNAPSHOT
	// file is served without asking the upstream.
	MetadataValidity time.Duration
	// NegativeTTL is how long an upstream 404 is remembered (0: never).
	NegativeTTL time.Duration
	// SettingsChangedAt changes with every settings change: the protocol
	// keys its upstream client by it.
	SettingsChangedAt time.Time
	HasCredentials    bool
}

// RemoteInput is the upstream settings of a new Maven proxy; nil
// validities take the defaults.
type RemoteInput struct {
	URL                        string
	Credentials                *container.Credentials
	CacheValidityHours         *int
	MetadataCacheValidityHours *int
	NegativeCacheMinutes       *int
}

// RemoteUpdate changes a Maven proxy's settings; nil leaves a field as is.
type RemoteUpdate struct {
	URL                        *string
	Credentials                *container.Credentials
	ClearCredentials           bool
	CacheValidityHours         *int
	MetadataCacheValidityHours *int
	NegativeCacheMinutes       *int
}

// RemoteSettings is a maven_remote_repositories row as the management API
// shows it (never the credentials).
type RemoteSettings struct {
	ID                         uuid.UUID
	NamespaceID                uuid.UUID
	RepositoryID               uuid.UUID
	URL                        string
	CacheValidityHours         int
	MetadataCacheValidityHours int
	NegativeCacheMinutes       int
	HasCredentials             bool
	HealthStatus               enum.HealthStatus
	HealthCheckedAt            *time.Time
	HealthError                *string
	CacheHits                  int64
	CacheMisses                int64
	SettingsChangedAt          time.Time
}

var errNoKeyring = errs.New(container.CodeNoKeyring,
	"upstream credentials cannot be stored or read: this instance has no keyring (see --root-key-url)")

// SetKeyring gives the store the keyring that seals and opens the
// upstream credentials of Maven proxies. Without one, settings with
// credentials are refused.
func (s *Store) SetKeyring(k container.Keyring) { s.keyring = k }

func validateHours(name string, h int) error {
	if h < 0 || h > container.MaxCacheValidityHours {
		return errs.New(store.CodeInvalidInput, "%s must be between 0 and %d", name, container.MaxCacheValidityHours)
	}
	return nil
}

func validateNegativeMinutes(m int) error {
	if m < 0 || m > MaxNegativeCacheMinutes {
		return errs.New(store.CodeInvalidInput, "negativeCacheMinutes must be between 0 and %d", MaxNegativeCacheMinutes)
	}
	return nil
}

func validateRemoteCredentials(c *container.Credentials) error {
	if c == nil {
		return nil
	}
	for _, f := range []struct{ name, v string }{{"username", c.Username}, {"password", c.Password}} {
		switch {
		case f.v == "":
			return errs.New(store.CodeInvalidInput, "remote %s must not be empty: give both username and password, or neither", f.name)
		case !utf8.ValidString(f.v) || strings.ContainsRune(f.v, 0):
			return errs.New(store.CodeInvalidInput, "remote %s is not valid text", f.name)
		case utf8.RuneCountInString(f.v) > credentials.MaxPlaintextChars:
			return errs.New(store.CodeInvalidInput, "remote %s is longer than %d characters", f.name, credentials.MaxPlaintextChars)
		}
	}
	return nil
}

func orDefault(p *int, d int) int {
	if p == nil {
		return d
	}
	return *p
}

// NewRemote returns the child writer of store.NewRepository for a Maven
// proxy: it validates the settings and inserts the
// maven_remote_repositories row, its credentials sealed by the keyring,
// in the creating transaction.
func (s *Store) NewRemote(in RemoteInput) (store.ChildWriter, error) {
	u, err := container.ValidateRemoteURL(in.URL)
	if err != nil {
		return nil, err
	}
	hours := orDefault(in.CacheValidityHours, DefaultRemoteCacheValidityHours)
	meta := orDefault(in.MetadataCacheValidityHours, DefaultMetadataCacheValidityHours)
	neg := orDefault(in.NegativeCacheMinutes, DefaultNegativeCacheMinutes)
	if err := errors.Join(validateHours("cacheValidityHours", hours), validateHours("metadataCacheValidityHours", meta),
		validateNegativeMinutes(neg)); err != nil {
		return nil, firstErr(err)
	}
	if err := validateRemoteCredentials(in.Credentials); err != nil {
		return nil, err
	}
	if in.Credentials != nil && s.keyring == nil {
		return nil, errNoKeyring
	}
	return func(ctx context.Context, tx pgx.Tx, ns *store.Namespace, repo *store.Repository) error {
		if repo.Format != enum.FormatMaven {
			return errs.New(store.CodeInvalidInput, "these remote settings are for MAVEN repositories")
		}
		id := db.NewID()
		if _, err := tx.Exec(ctx, `
			INSERT INTO maven_remote_repositories (id, namespace_id, repository_id, url, cache_validity_hours,
			                                       metadata_cache_validity_hours, negative_cache_minutes)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, id, ns.ID, repo.ID, u, hours, meta, neg); err != nil {
			return fmt.Errorf("store: insert maven remote repository: %w", err)
		}
		if in.Credentials != nil {
			return s.sealRemoteCredentials(ctx, tx, ns.ID, id, *in.Credentials)
		}
		return nil
	}, nil
}

// firstErr unwraps errors.Join to its first error (each validation error
// is a store.Error the API shows as is).
func firstErr(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		if es := j.Unwrap(); len(es) > 0 {
			return es[0]
		}
	}
	return err
}

// UpdateRemote returns the child writer of store.RepositoryUpdate that
// changes a Maven proxy's settings. Every change bumps
// settings_changed_at, so each instance rebuilds its upstream client (and
// its negative cache) on its next request. A URL change keeps the cache:
// release files are immutable wherever they come from, and metadata is
// revalidated against the new upstream when it is next asked for.
func (s *Store) UpdateRemote(upd RemoteUpdate) (store.ChildWriter, error) {
	var newURL *string
	if upd.URL != nil {
		u, err := container.ValidateRemoteURL(*upd.URL)
		if err != nil {
			return nil, err
		}
		newURL = &u
	}
	for _, c := range []struct {
		name string
		v    *int
	}{{"cacheValidityHours", upd.CacheValidityHours}, {"metadataCacheValidityHours", upd.MetadataCacheValidityHours}} {
		if c.v != nil {
			if err := validateHours(c.name, *c.v); err != nil {
				return nil, err
			}
		}
	}
	if upd.NegativeCacheMinutes != nil {
		if err := validateNegativeMinutes(*upd.NegativeCacheMinutes); err != nil {
			return nil, err
		}
	}
	if upd.Credentials != nil && upd.ClearCredentials {
		return nil, errs.New(store.CodeInvalidInput, "give new credentials or clear them, not both")
	}
	if err := validateRemoteCredentials(upd.Credentials); err != nil {
		return nil, err
	}
	if upd.Credentials != nil && s.keyring == nil {
		return nil, errNoKeyring
	}
	if newURL == nil && upd.CacheValidityHours == nil && upd.MetadataCacheValidityHours == nil &&
		upd.NegativeCacheMinutes == nil && upd.Credentials == nil && !upd.ClearCredentials {
		return nil, errs.New(store.CodeInvalidInput, "nothing to update in the remote settings")
	}
	return func(ctx context.Context, tx pgx.Tx, ns *store.Namespace, repo *store.Repository) error {
		var id uuid.UUID
		err := tx.QueryRow(ctx, `
			UPDATE maven_remote_repositories
			SET url = coalesce($3, url), cache_validity_hours = coalesce($4, cache_validity_hours),
			    metadata_cache_validity_hours = coalesce($5, metadata_cache_validity_hours),
			    negative_cache_minutes = coalesce($6, negative_cache_minutes),
			    settings_changed_at = clock_timestamp()
			WHERE namespace_id = $1 AND repository_id = $2
			RETURNING id`, ns.ID, repo.ID, newURL, upd.CacheValidityHours, upd.MetadataCacheValidityHours,
			upd.NegativeCacheMinutes).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(store.CodeInvalidInput, "repository %s is not a Maven remote repository: it has no remote settings", repo.Name)
		}
		if err != nil {
			return fmt.Errorf("store: update maven remote repository: %w", err)
		}
		switch {
		case upd.Credentials != nil:
			return s.sealRemoteCredentials(ctx, tx, ns.ID, id, *upd.Credentials)
		case upd.ClearCredentials:
			if _, err := tx.Exec(ctx, `
				UPDATE maven_remote_repositories
				SET wrapped_dek = NULL, ns_key_id = NULL, ns_key_version = NULL, encrypted_username = NULL, encrypted_password = NULL
				WHERE namespace_id = $1 AND id = $2`, ns.ID, id); err != nil {
				return fmt.Errorf("store: clear maven remote credentials: %w", err)
			}
		}
		return nil
	}, nil
}

func mavenRemoteRow(nsID, id uuid.UUID) credentials.Row {
	return credentials.Row{Table: credentials.MavenRemote, NamespaceID: nsID, ID: id}
}

// sealRemoteCredentials encrypts c for the remote row id and stores the
// unit.
func (s *Store) sealRemoteCredentials(ctx context.Context, tx pgx.Tx, nsID, id uuid.UUID, c container.Credentials) error {
	if s.keyring == nil {
		return errNoKeyring
	}
	cols, err := s.keyring.Seal(ctx, tx, mavenRemoteRow(nsID, id), credentials.NewSecret(c.Username), credentials.NewSecret(c.Password))
	if err != nil {
		return err
	}
	args := append([]any{nsID, id}, cols.Args()...)
	if _, err := tx.Exec(ctx, `
		UPDATE maven_remote_repositories
		SET (`+credentials.MavenRemote.UnitColumns()+`) = ($3, $4, $5, $6, $7)
		WHERE namespace_id = $1 AND id = $2`, args...); err != nil {
		return fmt.Errorf("store: store maven remote credentials: %w", err)
	}
	return nil
}

// RemoteCredentials opens the credentials of a Maven proxy (nil when it
// has none). Only the protocol's upstream client asks, when it builds the
// client of a remote whose settings changed.
func (s *Store) RemoteCredentials(ctx context.Context, nsID, remoteID uuid.UUID) (*container.Credentials, error) {
	scan := credentials.MavenRemote.NewScan()
	err := s.pool.QueryRow(ctx, `SELECT `+credentials.MavenRemote.UnitColumns()+`
		FROM maven_remote_repositories WHERE namespace_id = $1 AND id = $2`, nsID, remoteID).Scan(scan.Dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(CodeRepositoryUnknown, "Maven remote repository not found")
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: maven remote credentials: %w", err))
	}
	cols, err := scan.Columns()
	if err != nil || cols == nil {
		return nil, err
	}
	if s.keyring == nil {
		return nil, errNoKeyring
	}
	plain, err := s.keyring.Open(ctx, s.pool, mavenRemoteRow(nsID, remoteID), cols)
	if err != nil {
		return nil, err
	}
	return &container.Credentials{Username: plain[0].Reveal(), Password: plain[1].Reveal()}, nil
}

const remoteSettingsColumns = `mrr.id, mrr.namespace_id, mrr.repository_id, mrr.url, mrr.cache_validity_hours,
	mrr.metadata_cache_validity_hours, mrr.negative_cache_minutes,
	mrr.wrapped_dek IS NOT NULL, mrr.last_health_status, mrr.last_health_checked_at, mrr.last_health_error,
	mrr.cache_hits, mrr.cache_misses, mrr.settings_changed_at`

func scanRemoteSettings(row pgx.Row) (*RemoteSettings, error) {
	var (
		r                 RemoteSettings
		hours, meta, negm int16
		health            int16
	)
	if err := row.Scan(&r.ID, &r.NamespaceID, &r.RepositoryID, &r.URL, &hours, &meta, &negm, &r.HasCredentials, &health,
		&r.HealthCheckedAt, &r.HealthError, &r.CacheHits, &r.CacheMisses, &r.SettingsChangedAt); err != nil {
		return nil, err
	}
	r.CacheValidityHours, r.MetadataCacheValidityHours, r.NegativeCacheMinutes = int(hours), int(meta), int(negm)
	r.HealthStatus = enum.HealthStatus(health)
	return &r, nil
}

// RemoteSettingsByRepositories loads the settings of the Maven proxies
// among repositories of one namespace (the management API's data loader).
func (s *Store) RemoteSettingsByRepositories(ctx context.Context, nsID uuid.UUID, repositoryIDs []uuid.UUID) ([]*RemoteSettings, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+remoteSettingsColumns+` FROM maven_remote_repositories mrr
		WHERE mrr.namespace_id = $1 AND mrr.repository_id = ANY($2::uuid[])`, nsID, repositoryIDs)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: maven remote settings: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*RemoteSettings, error) { return scanRemoteSettings(r) })
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: maven remote settings: %w", err))
	}
	return out, nil
}

// RecordRemoteHealth stores what the upstream layer last saw of a Maven
// proxy's upstream, from the upstream client's background recorder,
// never on a request's path. lastError is cut to MaxHealthError
// characters.
func (s *Store) RecordRemoteHealth(ctx context.Context, nsID, remoteID uuid.UUID, status enum.HealthStatus, at time.Time, lastError string) error {
	return store.RecordRemoteHealth(ctx, s.pool, "maven_remote_repositories", nsID, remoteID, status, at, lastError)
}

package npm

import (
	"context"
	"encoding/base64"
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

// npm pull-through caches (repositories of format NPM and kind REMOTE,
// npm_remote_* tables; docs/remote-repositories.md): their settings and
// upstream credentials. What comes from the upstream is the protocol's
// business (protocol/npm with the upstream layer); remote_cache.go reads
// and writes the cache.

// Limits and defaults of an npm remote's settings.
const (
	// DefaultRemoteCacheValidityHours is cache_validity_hours' default.
	// Tarballs are immutable and never expire; the value is kept for the
	// settings' shape shared with the other formats.
	DefaultRemoteCacheValidityHours = 24
	// DefaultRemoteMetadataValidityHours is how long a cached packument
	// is served before the upstream is asked again (conditional GET).
	DefaultRemoteMetadataValidityHours = 1
	// MaxRemoteValidityHours bounds both validities (a year).
	MaxRemoteValidityHours = 8760
	// MaxRemoteHealthError bounds last_health_error.
	MaxRemoteHealthError = store.MaxRemoteHealthError
)

// CodeRemoteReadOnly: a publish, an unpublish or a dist-tag change on a
// pull-through cache, which only serves what its upstream has.
var CodeRemoteReadOnly = store.Code{Name: "NPM_REMOTE_READ_ONLY", Kind: store.KindConflict}

// CodeNoKeyring: credentials were given, or must be read, and no keyring
// was given.
var CodeNoKeyring = container.CodeNoKeyring

var errNoKeyring = errs.New(CodeNoKeyring,
	"upstream credentials cannot be stored or read: this instance has no keyring (see --root-key-url)")

// Credentials are an upstream user name and password in plaintext (they
// print as a mask).
type Credentials = container.Credentials

// Keyring seals and opens upstream credentials.
type Keyring = *credentials.Keyring

// RemoteTarget is what a resolved npm pull-through cache carries besides
// the Repository's common fields.
type RemoteTarget struct {
	// ID is the npm_remote_repositories row.
	ID  uuid.UUID
	URL string
	// MetadataValidity is how long a cached packument is served without
	// asking the upstream.
	MetadataValidity time.Duration
	// SettingsChangedAt changes with the URL, the credentials or a
	// validity: the protocol keys its upstream client by it.
	SettingsChangedAt time.Time
	HasCredentials    bool
}

// RemoteSettings is an npm_remote_repositories row as the management API
// shows it (never the credentials).
type RemoteSettings struct {
	ID                         uuid.UUID
	NamespaceID                uuid.UUID
	RepositoryID               uuid.UUID
	URL                        string
	CacheValidityHours         int
	MetadataCacheValidityHours int
	HasCredentials             bool
	HealthStatus               enum.HealthStatus
	HealthCheckedAt            *time.Time
	HealthError                *string
	CacheHits                  int64
	CacheMisses                int64
	SettingsChangedAt          time.Time
}

// RemoteInput is the upstream settings of a new npm remote.
type RemoteInput struct {
	URL         string
	Credentials *Credentials
	// nil: the defaults (24 and 1).
	CacheValidityHours         *int
	MetadataCacheValidityHours *int
}

// RemoteUpdate changes a remote's settings; nil leaves a field as is.
type RemoteUpdate struct {
	URL                        *string
	Credentials                *Credentials
	ClearCredentials           bool
	CacheValidityHours         *int
	MetadataCacheValidityHours *int
}

func validateValidity(field string, h *int) error {
	if h != nil && (*h < 0 || *h > MaxRemoteValidityHours) {
		return errs.New(store.CodeInvalidInput, "%s must be between 0 and %d", field, MaxRemoteValidityHours)
	}
	return nil
}

// validateCredentials checks credentials for npm's Basic authorization,
// whose user name cannot hold a colon.
func validateCredentials(c *Credentials) error {
	if c == nil {
		return nil
	}
	for _, f := range []struct{ name, v string }{{"username", c.Username}, {"password", c.Password}} {
		switch {
		case f.v == "":
			return errs.New(store.CodeInvalidInput, "remote %s must not be empty: give both username and password, or neither", f.name)
		case !utf8.ValidString(f.v) || strings.ContainsRune(f.v, 0):
			return errs.New(store.CodeInvalidInput, "remote %s is not valid text", f.name)
		case utf8.RuneCountInString(f.v) > 2048:
			return errs.New(store.CodeInvalidInput, "remote %s is longer than 2048 characters", f.name)
		}
	}
	if strings.ContainsRune(c.Username, ':') {
		return errs.New(store.CodeInvalidInput, "remote username must not contain ':' (npm sends it in Basic authorization)")
	}
	return nil
}

// NewRemote returns the child writer of store.NewRepository for an npm
// pull-through cache: it validates the settings and inserts the
// npm_remote_repositories row, its credentials sealed by k, in the
// creating transaction.
func (s *Store) NewRemote(k Keyring, in RemoteInput) (store.ChildWriter, error) {
	u, err := container.ValidateRemoteURL(in.URL)
	if err != nil {
		return nil, err
	}
	hours, meta := DefaultRemoteCacheValidityHours, DefaultRemoteMetadataValidityHours
	if in.CacheValidityHours != nil {
		hours = *in.CacheValidityHours
	}
	if in.MetadataCacheValidityHours != nil {
		meta = *in.MetadataCacheValidityHours
	}
	if err := validateValidity("cacheValidityHours", &hours); err != nil {
		return nil, err
	}
	if err := validateValidity("metadataCacheValidityHours", &meta); err != nil {
		return nil, err
	}
	if err := validateCredentials(in.Credentials); err != nil {
		return nil, err
	}
	if in.Credentials != nil && k == nil {
		return nil, errNoKeyring
	}
	return func(ctx context.Context, tx pgx.Tx, ns *store.Namespace, repo *store.Repository) error {
		if repo.Format != enum.FormatNpm {
			return errs.New(store.CodeInvalidInput, "these remote settings are for NPM repositories")
		}
		id := db.NewID()
		if _, err := tx.Exec(ctx, `
			INSERT INTO npm_remote_repositories (id, namespace_id, repository_id, url, cache_validity_hours, metadata_cache_validity_hours)
			VALUES ($1, $2, $3, $4, $5, $6)`, id, ns.ID, repo.ID, u, hours, meta); err != nil {
			return fmt.Errorf("store: insert npm remote repository: %w", err)
		}
		if in.Credentials != nil {
			return sealCredentials(ctx, tx, k, ns.ID, id, *in.Credentials)
		}
		return nil
	}, nil
}

// UpdateRemote returns the child writer of store.RepositoryUpdate that
// changes an npm pull-through cache's settings. Every change bumps
// settings_changed_at, so each instance rebuilds its upstream client on
// its next request. A URL change keeps the cache: packuments are
// revalidated against the new upstream when next asked for.
func (s *Store) UpdateRemote(k Keyring, upd RemoteUpdate) (store.ChildWriter, error) {
	var newURL *string
	if upd.URL != nil {
		u, err := container.ValidateRemoteURL(*upd.URL)
		if err != nil {
			return nil, err
		}
		newURL = &u
	}
	if err := validateValidity("cacheValidityHours", upd.CacheValidityHours); err != nil {
		return nil, err
	}
	if err := validateValidity("metadataCacheValidityHours", upd.MetadataCacheValidityHours); err != nil {
		return nil, err
	}
	if upd.Credentials != nil && upd.ClearCredentials {
		return nil, errs.New(store.CodeInvalidInput, "give new credentials or clear them, not both")
	}
	if err := validateCredentials(upd.Credentials); err != nil {
		return nil, err
	}
	if upd.Credentials != nil && k == nil {
		return nil, errNoKeyring
	}
	if newURL == nil && upd.CacheValidityHours == nil && upd.MetadataCacheValidityHours == nil && upd.Credentials == nil && !upd.ClearCredentials {
		return nil, errs.New(store.CodeInvalidInput, "nothing to update in the remote settings")
	}
	return func(ctx context.Context, tx pgx.Tx, ns *store.Namespace, repo *store.Repository) error {
		var id uuid.UUID
		err := tx.QueryRow(ctx, `
			UPDATE npm_remote_repositories
			SET url = coalesce($3, url), cache_validity_hours = coalesce($4, cache_validity_hours),
			    metadata_cache_validity_hours = coalesce($5, metadata_cache_validity_hours),
			    settings_changed_at = clock_timestamp()
			WHERE namespace_id = $1 AND repository_id = $2
			RETURNING id`, ns.ID, repo.ID, newURL, upd.CacheValidityHours, upd.MetadataCacheValidityHours).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(store.CodeInvalidInput, "repository %s is not an npm remote repository: it has no remote settings", repo.Name)
		}
		if err != nil {
			return fmt.Errorf("store: update npm remote repository: %w", err)
		}
		switch {
		case upd.Credentials != nil:
			return sealCredentials(ctx, tx, k, ns.ID, id, *upd.Credentials)
		case upd.ClearCredentials:
			if _, err := tx.Exec(ctx, `
				UPDATE npm_remote_repositories
				SET wrapped_dek = NULL, ns_key_id = NULL, ns_key_version = NULL, encrypted_auth_token = NULL
				WHERE namespace_id = $1 AND id = $2`, ns.ID, id); err != nil {
				return fmt.Errorf("store: clear npm remote credentials: %w", err)
			}
		}
		return nil
	}, nil
}

// Upstream credentials of an npm remote are the credential unit of its
// row (docs/security/upstream-credentials.md), with one ciphertext: the
// Basic authorization token npm itself would send (base64 of
// "user:password"), which gives both parts back unambiguously since the
// user name has no colon.

func remoteRow(nsID, id uuid.UUID) credentials.Row {
	return credentials.Row{Table: credentials.NpmRemote, NamespaceID: nsID, ID: id}
}

func sealCredentials(ctx context.Context, tx pgx.Tx, k Keyring, nsID, id uuid.UUID, c Credentials) error {
	if k == nil {
		return errNoKeyring
	}
	token := base64.StdEncoding.EncodeToString([]byte(c.Username + ":" + c.Password))
	cols, err := k.Seal(ctx, tx, remoteRow(nsID, id), credentials.NewSecret(token))
	if err != nil {
		return err
	}
	args := append([]any{nsID, id}, cols.Args()...)
	if _, err := tx.Exec(ctx, `
		UPDATE npm_remote_repositories
		SET (`+credentials.NpmRemote.UnitColumns()+`) = ($3, $4, $5, $6)
		WHERE namespace_id = $1 AND id = $2`, args...); err != nil {
		return fmt.Errorf("store: store npm remote credentials: %w", err)
	}
	return nil
}

// RemoteCredentials opens the credentials of an npm remote (nil when it
// has none). Only the protocol's upstream client asks, when it builds the
// client of a remote whose settings changed.
func (s *Store) RemoteCredentials(ctx context.Context, k Keyring, nsID, remoteID uuid.UUID) (*Credentials, error) {
	scan := credentials.NpmRemote.NewScan()
	err := s.pool.QueryRow(ctx, `SELECT `+credentials.NpmRemote.UnitColumns()+`
		FROM npm_remote_repositories WHERE namespace_id = $1 AND id = $2`, nsID, remoteID).Scan(scan.Dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(CodeRepositoryUnknown, "npm remote repository not found")
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm remote credentials: %w", err))
	}
	cols, err := scan.Columns()
	if err != nil || cols == nil {
		return nil, err
	}
	if k == nil {
		return nil, errNoKeyring
	}
	plain, err := k.Open(ctx, s.pool, remoteRow(nsID, remoteID), cols)
	if err != nil {
		return nil, err
	}
	raw, err := base64.StdEncoding.DecodeString(plain[0].Reveal())
	if err != nil {
		return nil, fmt.Errorf("store: npm remote credentials do not decode")
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return nil, fmt.Errorf("store: npm remote credentials are not user:password")
	}
	return &Credentials{Username: user, Password: pass}, nil
}

const remoteSettingsColumns = `nrr.id, nrr.namespace_id, nrr.repository_id, nrr.url, nrr.cache_validity_hours,
	nrr.metadata_cache_validity_hours, nrr.wrapped_dek IS NOT NULL, nrr.last_health_status, nrr.last_health_checked_at,
	nrr.last_health_error, nrr.cache_hits, nrr.cache_misses, nrr.settings_changed_at`

func scanRemoteSettings(row pgx.Row) (*RemoteSettings, error) {
	var (
		r            RemoteSettings
		hours, meta  int16
		healthStatus int16
	)
	if err := row.Scan(&r.ID, &r.NamespaceID, &r.RepositoryID, &r.URL, &hours, &meta, &r.HasCredentials, &healthStatus,
		&r.HealthCheckedAt, &r.HealthError, &r.CacheHits, &r.CacheMisses, &r.SettingsChangedAt); err != nil {
		return nil, err
	}
	r.CacheValidityHours, r.MetadataCacheValidityHours, r.HealthStatus = int(hours), int(meta), enum.HealthStatus(healthStatus)
	return &r, nil
}

// RemoteSettingsByRepositories loads the npm remote settings of
// repositories of one namespace (the management API's data loader);
// repositories that are not npm remotes are left out.
func (s *Store) RemoteSettingsByRepositories(ctx context.Context, nsID uuid.UUID, repositoryIDs []uuid.UUID) ([]*RemoteSettings, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+remoteSettingsColumns+` FROM npm_remote_repositories nrr
		WHERE nrr.namespace_id = $1 AND nrr.repository_id = ANY($2::uuid[])`, nsID, repositoryIDs)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm remote settings: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*RemoteSettings, error) { return scanRemoteSettings(r) })
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm remote settings: %w", err))
	}
	return out, nil
}

// RecordRemoteHealth stores what the upstream layer last saw of a remote's
// upstream, from the upstream client's background recorder (never on a
// request's path). lastError is cut to MaxRemoteHealthError characters.
func (s *Store) RecordRemoteHealth(ctx context.Context, nsID, remoteID uuid.UUID, status enum.HealthStatus, at time.Time, lastError string) error {
	return store.RecordRemoteHealth(ctx, s.pool, "npm_remote_repositories", nsID, remoteID, status, at, lastError)
}

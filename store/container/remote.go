package container

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// Container pull-through caches (repositories of kind REMOTE,
// container_remote_* tables; docs/remote-repositories.md): their settings,
// resolution, cached content and eviction. What comes from the upstream
// is the protocol's business (protocol/oci with the upstream layer); this
// file and remote_*.go only read and write the cache.

// Limits of a remote's settings (docs/schema.md, "Lengths, names and
// limits").
const (
	MaxRemoteURL = 1024
	// MaxCacheValidityHours bounds cache_validity_hours (a year).
	MaxCacheValidityHours = 8760
	// DefaultCacheValidityHours is the column's default.
	DefaultCacheValidityHours = 24
	// MaxHealthError bounds last_health_error.
	MaxHealthError = store.MaxRemoteHealthError
)

// CodeRemoteUnsupported: a push, a delete or an upload through a
// pull-through cache, which only serves what its upstream has.
var CodeRemoteUnsupported = store.Code{Name: "CONTAINER_REMOTE_READ_ONLY", Kind: store.KindConflict}

// RemoteTarget is what a resolved name of a pull-through cache carries
// besides the Target's common fields.
type RemoteTarget struct {
	// ID is the container_remote_repositories row.
	ID  uuid.UUID
	URL string
	// CacheValidity is how long a cached tag is served without asking
	// the upstream (cache_validity_hours).
	CacheValidity time.Duration
	// SettingsChangedAt changes with the URL, the credentials or the
	// cache validity: the protocol keys its upstream client by it.
	SettingsChangedAt time.Time
	HasCredentials    bool
	// UpstreamImage is the image's name upstream: Target.ImageName, with
	// Docker Hub's "library/" rule applied (UpstreamImageName). Cached
	// images are stored under it, so "alpine" and "library/alpine" share
	// one cache.
	UpstreamImage string
}

// RemoteSettings is a remote repository's container_remote_repositories
// row as the management API shows it (never the credentials).
type RemoteSettings struct {
	ID                 uuid.UUID
	NamespaceID        uuid.UUID
	RepositoryID       uuid.UUID
	URL                string
	CacheValidityHours int
	HasCredentials     bool
	HealthStatus       enum.HealthStatus
	HealthCheckedAt    *time.Time
	HealthError        *string
	CacheHits          int64
	CacheMisses        int64
	SettingsChangedAt  time.Time
}

// Credentials are an upstream user name and password in plaintext. They
// print as a mask, so a log or an error that formats them shows nothing.
type Credentials struct {
	Username string
	Password string
}

// String masks the credentials.
func (c Credentials) String() string { return "[REDACTED]" }

// GoString masks the credentials (%#v).
func (c Credentials) GoString() string { return "[REDACTED]" }

// RemoteInput is the upstream settings of a new remote repository.
type RemoteInput struct {
	URL string
	// Credentials, when set, are stored encrypted (both fields non-empty).
	Credentials *Credentials
	// CacheValidityHours: nil takes the default (24).
	CacheValidityHours *int
}

// RemoteUpdate changes a remote's settings; nil leaves a field as is.
type RemoteUpdate struct {
	URL                *string
	Credentials        *Credentials
	ClearCredentials   bool
	CacheValidityHours *int
}

// dockerHubHosts are the names under which clients and users know Docker
// Hub's registry; the library/ rule applies to an upstream URL on any of
// them.
var dockerHubHosts = map[string]bool{
	"docker.io": true, "index.docker.io": true, "registry-1.docker.io": true, "registry.hub.docker.com": true,
}

// IsDockerHub reports whether an upstream URL is Docker Hub's registry.
func IsDockerHub(upstreamURL string) bool {
	u, err := url.Parse(upstreamURL)
	if err != nil {
		return false
	}
	return dockerHubHosts[strings.ToLower(u.Hostname())]
}

// UpstreamImageName is the name the upstream knows an image by. Docker
// Hub keeps its official images under "library/", and Docker clients add
// that prefix to a one-component name; a remote of Docker Hub does the
// same, so "hub/alpine" pulls "library/alpine".
func UpstreamImageName(upstreamURL, image string) string {
	if !strings.Contains(image, "/") && IsDockerHub(upstreamURL) {
		return "library/" + image
	}
	return image
}

// ValidateRemoteURL checks an upstream URL: http or https with a host, no
// credentials, query or fragment, at most MaxRemoteURL characters. It
// returns the URL without a trailing slash.
func ValidateRemoteURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	bad := func(why string) error {
		return errs.New(store.CodeInvalidInput, "invalid remote URL: %s", why)
	}
	if raw == "" {
		return "", bad("it is empty")
	}
	if utf8.RuneCountInString(raw) > MaxRemoteURL {
		return "", bad(fmt.Sprintf("longer than %d characters", MaxRemoteURL))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", bad("it does not parse")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", bad("the scheme must be http or https")
	case u.Host == "" || u.Hostname() == "":
		return "", bad("it has no host")
	case u.User != nil:
		return "", bad("it must not hold credentials: give them as username and password")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", bad("it must not have a query or fragment")
	}
	return strings.TrimRight(raw, "/"), nil
}

func validateCacheValidity(h int) error {
	if h < 0 || h > MaxCacheValidityHours {
		return errs.New(store.CodeInvalidInput, "cacheValidityHours must be between 0 and %d", MaxCacheValidityHours)
	}
	return nil
}

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
	return nil
}

// NewRemote returns the child writer of store.NewRepository for a
// container pull-through cache: it validates the settings and inserts the
// container_remote_repositories row, its credentials sealed by the
// keyring, in the creating transaction.
func (s *Store) NewRemote(in RemoteInput) (store.ChildWriter, error) {
	u, err := ValidateRemoteURL(in.URL)
	if err != nil {
		return nil, err
	}
	hours := DefaultCacheValidityHours
	if in.CacheValidityHours != nil {
		hours = *in.CacheValidityHours
	}
	if err := validateCacheValidity(hours); err != nil {
		return nil, err
	}
	if err := validateCredentials(in.Credentials); err != nil {
		return nil, err
	}
	if in.Credentials != nil && s.keyring == nil {
		return nil, errNoKeyring
	}
	return func(ctx context.Context, tx pgx.Tx, ns *store.Namespace, repo *store.Repository) error {
		if repo.Format != enum.FormatDocker && repo.Format != enum.FormatOCI {
			return errs.New(store.CodeInvalidInput, "these remote settings are for DOCKER or OCI repositories")
		}
		id := db.NewID()
		if _, err := tx.Exec(ctx, `
			INSERT INTO container_remote_repositories (id, namespace_id, repository_id, url, cache_validity_hours)
			VALUES ($1, $2, $3, $4, $5)`, id, ns.ID, repo.ID, u, hours); err != nil {
			return fmt.Errorf("store: insert container remote repository: %w", err)
		}
		if in.Credentials != nil {
			return s.sealCredentials(ctx, tx, ns.ID, id, *in.Credentials)
		}
		return nil
	}, nil
}

// UpdateRemote returns the child writer of store.RepositoryUpdate that
// changes a container pull-through cache's settings. Every change bumps
// settings_changed_at, so each instance rebuilds its upstream client on
// its next request; a URL change keeps the cache (content is addressed
// by digest, and tags are revalidated against the new upstream when they
// are next asked for).
func (s *Store) UpdateRemote(upd RemoteUpdate) (store.ChildWriter, error) {
	var newURL *string
	if upd.URL != nil {
		u, err := ValidateRemoteURL(*upd.URL)
		if err != nil {
			return nil, err
		}
		newURL = &u
	}
	if upd.CacheValidityHours != nil {
		if err := validateCacheValidity(*upd.CacheValidityHours); err != nil {
			return nil, err
		}
	}
	if upd.Credentials != nil && upd.ClearCredentials {
		return nil, errs.New(store.CodeInvalidInput, "give new credentials or clear them, not both")
	}
	if err := validateCredentials(upd.Credentials); err != nil {
		return nil, err
	}
	if upd.Credentials != nil && s.keyring == nil {
		return nil, errNoKeyring
	}
	if newURL == nil && upd.CacheValidityHours == nil && upd.Credentials == nil && !upd.ClearCredentials {
		return nil, errs.New(store.CodeInvalidInput, "nothing to update in the remote settings")
	}
	return func(ctx context.Context, tx pgx.Tx, ns *store.Namespace, repo *store.Repository) error {
		var id uuid.UUID
		err := tx.QueryRow(ctx, `
			UPDATE container_remote_repositories
			SET url = coalesce($3, url), cache_validity_hours = coalesce($4, cache_validity_hours),
			    settings_changed_at = clock_timestamp()
			WHERE namespace_id = $1 AND repository_id = $2
			RETURNING id`, ns.ID, repo.ID, newURL, upd.CacheValidityHours).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(store.CodeInvalidInput, "repository %s is not a container remote repository: it has no remote settings", repo.Name)
		}
		if err != nil {
			return fmt.Errorf("store: update container remote repository: %w", err)
		}
		switch {
		case upd.Credentials != nil:
			return s.sealCredentials(ctx, tx, ns.ID, id, *upd.Credentials)
		case upd.ClearCredentials:
			if _, err := tx.Exec(ctx, `
				UPDATE container_remote_repositories
				SET wrapped_dek = NULL, ns_key_id = NULL, ns_key_version = NULL, encrypted_username = NULL, encrypted_password = NULL
				WHERE namespace_id = $1 AND id = $2`, ns.ID, id); err != nil {
				return fmt.Errorf("store: clear remote credentials: %w", err)
			}
		}
		return nil
	}, nil
}

const remoteSettingsColumns = `crr.id, crr.namespace_id, crr.repository_id, crr.url, crr.cache_validity_hours,
	crr.wrapped_dek IS NOT NULL, crr.last_health_status, crr.last_health_checked_at, crr.last_health_error,
	crr.cache_hits, crr.cache_misses, crr.settings_changed_at`

func scanRemoteSettings(row pgx.Row) (*RemoteSettings, error) {
	var (
		r      RemoteSettings
		hours  int16
		health int16
	)
	if err := row.Scan(&r.ID, &r.NamespaceID, &r.RepositoryID, &r.URL, &hours, &r.HasCredentials, &health,
		&r.HealthCheckedAt, &r.HealthError, &r.CacheHits, &r.CacheMisses, &r.SettingsChangedAt); err != nil {
		return nil, err
	}
	r.CacheValidityHours, r.HealthStatus = int(hours), enum.HealthStatus(health)
	return &r, nil
}

// RemoteSettingsByRepositories loads the remote settings of repositories
// of one namespace (the management API's data loader); repositories that
// are not container remotes are left out.
func (s *Store) RemoteSettingsByRepositories(ctx context.Context, nsID uuid.UUID, repositoryIDs []uuid.UUID) ([]*RemoteSettings, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+remoteSettingsColumns+` FROM container_remote_repositories crr
		WHERE crr.namespace_id = $1 AND crr.repository_id = ANY($2::uuid[])`, nsID, repositoryIDs)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: remote settings: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*RemoteSettings, error) { return scanRemoteSettings(r) })
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: remote settings: %w", err))
	}
	return out, nil
}

// RecordRemoteHealth stores what the upstream layer last saw of a
// remote's upstream. It is written from the upstream client's background
// recorder (on a change, otherwise at most once a minute), never on a
// request's path. lastError is cut to MaxHealthError characters.
func (s *Store) RecordRemoteHealth(ctx context.Context, nsID, remoteID uuid.UUID, status enum.HealthStatus, at time.Time, lastError string) error {
	return store.RecordRemoteHealth(ctx, s.pool, "container_remote_repositories", nsID, remoteID, status, at, lastError)
}

// resolveRemoteSQL completes a target whose repository is a container
// remote: its settings and its cached image, looked up under both names
// the Docker Hub rule can give (the caller picks by the URL).
const resolveRemoteSQL = `
SELECT crr.id, crr.url, crr.cache_validity_hours, crr.settings_changed_at, crr.wrapped_dek IS NOT NULL, a.id, b.id
FROM container_remote_repositories crr
LEFT JOIN container_remote_images a
       ON a.namespace_id = $1 AND a.container_remote_repository_id = crr.id AND a.name = $3 AND a.soft_deleted_at IS NULL
LEFT JOIN container_remote_images b
       ON b.namespace_id = $1 AND b.container_remote_repository_id = crr.id AND b.name = $4 AND b.soft_deleted_at IS NULL
WHERE crr.namespace_id = $1 AND crr.repository_id = $2`

// resolveRemote fills t.Remote and t.ImageID (the cached image, uuid.Nil
// before its first pull) for a repository of kind REMOTE.
func (s *Store) resolveRemote(ctx context.Context, t *Target) error {
	var (
		r          RemoteTarget
		hours      int16
		plain, lib *uuid.UUID
	)
	libName := t.ImageName
	if !strings.Contains(libName, "/") {
		libName = "library/" + libName
	}
	err := s.pool.QueryRow(ctx, resolveRemoteSQL, t.NamespaceID, t.RepositoryID, t.ImageName, libName).
		Scan(&r.ID, &r.URL, &hours, &r.SettingsChangedAt, &r.HasCredentials, &plain, &lib)
	if errors.Is(err, pgx.ErrNoRows) {
		return errs.New(CodeNameUnknown, "container repository unknown: repository %s/%s has no remote settings", t.NamespaceSlug, t.RepositoryName)
	}
	if err != nil {
		return db.MapErr(fmt.Errorf("store: resolve remote %s/%s: %w", t.NamespaceSlug, t.RepositoryName, err))
	}
	r.CacheValidity = time.Duration(hours) * time.Hour
	r.UpstreamImage = UpstreamImageName(r.URL, t.ImageName)
	id := plain
	if r.UpstreamImage != t.ImageName {
		id = lib
	}
	if id != nil {
		t.ImageID = *id
	}
	t.ContainerRepositoryID = r.ID
	t.Remote = &r
	return nil
}

package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// Namespace access tokens (migrations/00029_access_tokens.sql). The store
// never sees a secret: callers (package auth) mint the secret, hash it with
// SHA-256 and pass the hash; lookups are by (namespace_id, token_sha256),
// the namespace id coming from the token's plaintext prefix, so every
// query prunes to one partition.
//
// Authentication reads (AccessTokenByHash, AccessTokenByID) return revoked
// and expired rows as they are: deciding what they are worth is auth's job.
// last_used_at is written only by TouchAccessTokens, which auth calls from
// its periodic flush with the maximum use time per token, never per request.

// CodeAccessTokenNotFound: no token with that hash (or id) in the namespace.
// Returned by the authentication lookups; management operations return a
// store error with CodeNotFound instead.
var CodeAccessTokenNotFound = Code{Name: "ACCESS_TOKEN_NOT_FOUND", Kind: KindNotFound}

// AccessToken is an access_tokens row (the hash is never returned).
type AccessToken struct {
	ID          uuid.UUID
	NamespaceID uuid.UUID
	Name        string
	// Scopes as stored: sorted, without duplicates, never empty.
	Scopes []enum.TokenScope
	// RepositoryIDs restricts the token to these repositories of its
	// namespace; nil means every repository. Ids of repositories deleted
	// since simply match nothing.
	RepositoryIDs []uuid.UUID
	ExpiresAt     *time.Time
	RevokedAt     *time.Time
	LastUsedAt    *time.Time
	CreatedAt     time.Time
	// SecretHint is the start of the secret that lists show; "" for
	// tokens minted before hints were kept.
	SecretHint string
}

// HasScope reports whether the row lists the scope (no implication: see
// package auth for what a scope grants).
func (t *AccessToken) HasScope(s enum.TokenScope) bool { return slices.Contains(t.Scopes, s) }

// AccessTokenCredential is what authentication needs in one round trip:
// the token and the state of its namespace.
type AccessTokenCredential struct {
	AccessToken
	Namespace Namespace
}

// AccessTokenKey is the keyset position of a token in the listing order
// (created_at DESC, id DESC).
type AccessTokenKey struct {
	CreatedAt time.Time `json:"c"`
	ID        uuid.UUID `json:"i"`
}

// Key returns the keyset position of t.
func (t *AccessToken) Key() AccessTokenKey { return AccessTokenKey{CreatedAt: t.CreatedAt, ID: t.ID} }

// NewAccessToken describes a token to create.
type NewAccessToken struct {
	NamespaceID uuid.UUID
	Name        string
	// Scopes: at least one; duplicates are dropped.
	Scopes []enum.TokenScope
	// Repositories names active repositories of the namespace the token is
	// restricted to; nil means every repository (also future ones). An
	// empty non-nil list is refused, as is an unknown or trashed name.
	Repositories []string
	// ExpiresAt must lie in the future; nil means no expiry.
	ExpiresAt *time.Time
	// SecretSHA256 is SHA-256 of the secret, which only the caller sees.
	SecretSHA256 [32]byte
	// SecretHint is the start of the secret that lists show (see
	// auth.SecretHint); it must not reveal enough to matter.
	SecretHint string
}

// AccessTokenUse is one buffered use: the latest time a token was used.
type AccessTokenUse struct {
	NamespaceID uuid.UUID
	TokenID     uuid.UUID
	At          time.Time
}

// MaxAccessTokenRepositories bounds the repository list of one token.
const MaxAccessTokenRepositories = 1000

const accessTokenColumns = `t.id, t.namespace_id, t.name, t.scopes, t.repository_ids, t.expires_at, t.revoked_at, t.last_used_at, t.created_at, coalesce(t.secret_hint, '')`

func scanAccessToken(row pgx.Row, extra ...any) (*AccessToken, error) {
	var t AccessToken
	var scopes []int16
	dest := append([]any{&t.ID, &t.NamespaceID, &t.Name, &scopes, &t.RepositoryIDs, &t.ExpiresAt, &t.RevokedAt, &t.LastUsedAt, &t.CreatedAt, &t.SecretHint}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	t.Scopes = make([]enum.TokenScope, len(scopes))
	for i, s := range scopes {
		t.Scopes[i] = enum.TokenScope(s)
	}
	return &t, nil
}

// ValidateAccessTokenName checks a token name: 1 to 255 characters of
// valid UTF-8, no control characters, no leading or trailing space.
func ValidateAccessTokenName(name string) error {
	switch {
	case name == "":
		return errs.New(CodeInvalidInput, "token name must not be empty")
	case !utf8.ValidString(name):
		return errs.New(CodeInvalidInput, "token name must be valid UTF-8")
	case utf8.RuneCountInString(name) > MaxNameLength:
		return errs.New(CodeInvalidInput, "token name must be at most %d characters", MaxNameLength)
	case strings.TrimSpace(name) != name:
		return errs.New(CodeInvalidInput, "token name must not start or end with white space")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return errs.New(CodeInvalidInput, "token name must not contain control characters")
	}
	return nil
}

// normalizeScopes validates, sorts and deduplicates scopes.
func normalizeScopes(in []enum.TokenScope) ([]int16, error) {
	if len(in) == 0 {
		return nil, errs.New(CodeInvalidInput, "a token needs at least one scope")
	}
	out := make([]int16, 0, len(in))
	for _, s := range in {
		if !s.Valid() {
			return nil, errs.New(CodeInvalidInput, "unknown token scope %d", s)
		}
		out = append(out, int16(s))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// CreateAccessToken inserts a token. In one transaction it takes the
// namespace row FOR KEY SHARE (it must exist and be neither deleted nor
// purged; whether its service conditions allow token administration is
// auth's decision, made before), resolves the repository names to ids
// (active repositories of that namespace only) and inserts the row.
// A live (unrevoked) token of the same name gives CodeAlreadyExists.
func (s *Store) CreateAccessToken(ctx context.Context, in NewAccessToken) (*AccessToken, error) {
	if err := ValidateAccessTokenName(in.Name); err != nil {
		return nil, err
	}
	scopes, err := normalizeScopes(in.Scopes)
	if err != nil {
		return nil, err
	}
	if in.SecretSHA256 == ([32]byte{}) {
		return nil, errors.New("store: access token without a secret hash")
	}
	if in.ExpiresAt != nil && !in.ExpiresAt.After(s.opts.Clock.Now()) {
		return nil, errs.New(CodeInvalidInput, "expiresAt must lie in the future")
	}
	var names []string
	if in.Repositories != nil {
		names = slices.Clone(in.Repositories)
		slices.Sort(names)
		names = slices.Compact(names)
		switch {
		case len(names) == 0:
			return nil, errs.New(CodeInvalidInput, "repositories must not be an empty list: omit it for a token valid in every repository")
		case len(names) > MaxAccessTokenRepositories:
			return nil, errs.New(CodeInvalidInput, "a token can list at most %d repositories", MaxAccessTokenRepositories)
		}
		for _, n := range names {
			if !db.Lookupable(n) {
				return nil, errs.New(CodeNotFound, "repository %q not found", n)
			}
		}
	}
	id := db.NewID()
	var out *AccessToken
	err = s.WithTx(ctx, func(tx pgx.Tx) error {
		ns, err := scanNamespace(tx.QueryRow(ctx, `SELECT `+namespaceColumns+` FROM namespaces WHERE id = $1 FOR KEY SHARE`, in.NamespaceID))
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(CodeNotFound, "namespace %s not found", in.NamespaceID)
		}
		if err != nil {
			return fmt.Errorf("load namespace %s: %w", in.NamespaceID, err)
		}
		if ns.DeletedAt != nil || ns.PurgedAt != nil {
			return errs.New(CodeConflict, "namespace %q is %s: no tokens can be created", ns.Slug, strings.ToLower(string(ns.Status())))
		}
		var repoIDs []uuid.UUID
		if names != nil {
			rows, err := tx.Query(ctx, `
				SELECT r.id, r.name FROM repositories r
				WHERE r.namespace_id = $1 AND r.name = ANY($2) AND r.soft_deleted_at IS NULL
				ORDER BY r.id`, ns.ID, names)
			if err != nil {
				return fmt.Errorf("resolve token repositories: %w", err)
			}
			found := map[string]bool{}
			for rows.Next() {
				var rid uuid.UUID
				var name string
				if err := rows.Scan(&rid, &name); err != nil {
					rows.Close()
					return fmt.Errorf("resolve token repositories: %w", err)
				}
				repoIDs = append(repoIDs, rid)
				found[name] = true
			}
			if err := rows.Err(); err != nil {
				return fmt.Errorf("resolve token repositories: %w", err)
			}
			for _, n := range names {
				if !found[n] {
					return errs.New(CodeNotFound, "repository %q not found in namespace %q", n, ns.Slug)
				}
			}
		}
		out, err = scanAccessToken(tx.QueryRow(ctx, `
			INSERT INTO access_tokens AS t (id, namespace_id, name, token_sha256, scopes, repository_ids, expires_at, created_at, secret_hint)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULLIF($9, ''))
			RETURNING `+accessTokenColumns,
			id, ns.ID, in.Name, in.SecretSHA256[:], scopes, repoIDs, in.ExpiresAt, s.opts.Clock.Now(), in.SecretHint))
		if err != nil {
			// On a partition the violated index is the partition's
			// (access_tokens_pNN_namespace_id_name_idx).
			if code, constraint := db.PgCode(err); code == pgerrcode.UniqueViolation &&
				(constraint == "access_tokens_live_name_key" || strings.HasSuffix(constraint, "_namespace_id_name_idx")) {
				return errs.New(CodeAlreadyExists, "namespace %q already has a live token named %q", ns.Slug, in.Name)
			}
			return fmt.Errorf("insert access token: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

const accessTokenCredentialSQL = `SELECT ` + accessTokenColumns + `,
	n.id, n.slug, n.created_at, n.deleted_at, n.purged_at, n.blocked_at, n.disabled_at, n.suspended_at
FROM access_tokens t JOIN namespaces n ON n.id = t.namespace_id
WHERE t.namespace_id = $1 AND `

func (s *Store) accessTokenCredential(ctx context.Context, where string, nsID uuid.UUID, arg any) (*AccessTokenCredential, error) {
	var c AccessTokenCredential
	n := &c.Namespace
	tok, err := scanAccessToken(s.pool.QueryRow(ctx, accessTokenCredentialSQL+where, nsID, arg),
		&n.ID, &n.Slug, &n.CreatedAt, &n.DeletedAt, &n.PurgedAt, &n.BlockedAt, &n.DisabledAt, &n.SuspendedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(CodeAccessTokenNotFound, "access token not found")
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: load access token: %w", err))
	}
	c.AccessToken = *tok
	return &c, nil
}

// AccessTokenByHash is the authentication lookup: the token of the
// namespace whose secret hashes to sha, with its namespace's state, in one
// index lookup on (namespace_id, token_sha256). CodeAccessTokenNotFound
// when there is none. Revoked and expired tokens are returned.
func (s *Store) AccessTokenByHash(ctx context.Context, namespaceID uuid.UUID, sha [32]byte) (*AccessTokenCredential, error) {
	return s.accessTokenCredential(ctx, `t.token_sha256 = $2`, namespaceID, sha[:])
}

// AccessTokenByID loads a token and its namespace's state by id
// (re-validation of the OCI bearer tokens auth issues, management).
// CodeAccessTokenNotFound when there is none.
func (s *Store) AccessTokenByID(ctx context.Context, namespaceID, id uuid.UUID) (*AccessTokenCredential, error) {
	return s.accessTokenCredential(ctx, `t.id = $2`, namespaceID, id)
}

// ListAccessTokens returns up to limit tokens of a namespace after the key,
// newest first (index access_tokens_created_at_idx), and whether more
// follow. Revoked tokens are left out unless includeRevoked.
func (s *Store) ListAccessTokens(ctx context.Context, namespaceID uuid.UUID, after *AccessTokenKey, limit int, includeRevoked bool) ([]*AccessToken, bool, error) {
	if limit <= 0 {
		return nil, false, errs.New(CodeInvalidInput, "limit must be positive")
	}
	args := []any{namespaceID, limit + 1}
	var where []string
	if after != nil {
		args = append(args, after.CreatedAt, after.ID)
		where = append(where, `ROW(t.created_at, t.id) < ROW($3, $4)`)
	}
	if !includeRevoked {
		where = append(where, `t.revoked_at IS NULL`)
	}
	cond := ""
	if len(where) > 0 {
		cond = " AND " + strings.Join(where, " AND ")
	}
	rows, err := s.pool.Query(ctx, `SELECT `+accessTokenColumns+` FROM access_tokens t
		WHERE t.namespace_id = $1`+cond+`
		ORDER BY t.created_at DESC, t.id DESC LIMIT $2`, args...)
	if err != nil {
		return nil, false, db.MapErr(fmt.Errorf("list access tokens: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*AccessToken, error) { return scanAccessToken(r) })
	if err != nil {
		return nil, false, db.MapErr(fmt.Errorf("list access tokens: %w", err))
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// RevokeAccessToken sets revoked_at (idempotent: revoking a revoked token
// returns it unchanged). CodeNotFound when the namespace has no such token.
// Replicas that cached the token stop accepting it within auth's cache TTL.
func (s *Store) RevokeAccessToken(ctx context.Context, namespaceID, id uuid.UUID) (*AccessToken, error) {
	var out *AccessToken
	err := s.WithTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = scanAccessToken(tx.QueryRow(ctx, `
			UPDATE access_tokens AS t SET revoked_at = COALESCE(t.revoked_at, $3)
			WHERE t.namespace_id = $1 AND t.id = $2
			RETURNING `+accessTokenColumns, namespaceID, id, s.opts.Clock.Now()))
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(CodeNotFound, "access token %s not found", id)
		}
		if err != nil {
			return fmt.Errorf("revoke access token %s: %w", id, err)
		}
		return nil
	})
	return out, err
}

// TouchAccessTokens records buffered uses: last_used_at becomes the later
// of its value and the use time. One transaction and one round trip for
// the whole batch, one UPDATE per namespace (each prunes to one partition);
// rows are locked in id order so concurrent flushes of two replicas cannot
// deadlock, and rows already as recent are not rewritten. Tokens deleted
// meanwhile are skipped. It returns how many rows changed.
func (s *Store) TouchAccessTokens(ctx context.Context, uses []AccessTokenUse) (int64, error) {
	if len(uses) == 0 {
		return 0, nil
	}
	type tokenKey struct{ ns, id uuid.UUID }
	latest := make(map[tokenKey]time.Time, len(uses))
	for _, u := range uses {
		k := tokenKey{u.NamespaceID, u.TokenID}
		if at, ok := latest[k]; !ok || u.At.After(at) {
			latest[k] = u.At
		}
	}
	keys := make([]tokenKey, 0, len(latest))
	for k := range latest {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b tokenKey) int {
		if c := bytes.Compare(a.ns[:], b.ns[:]); c != 0 {
			return c
		}
		return bytes.Compare(a.id[:], b.id[:])
	})
	batch := &pgx.Batch{}
	for i := 0; i < len(keys); {
		j := i
		var ids []uuid.UUID
		var ats []time.Time
		for ; j < len(keys) && keys[j].ns == keys[i].ns; j++ {
			ids = append(ids, keys[j].id)
			ats = append(ats, latest[keys[j]])
		}
		batch.Queue(`
			WITH u AS (SELECT * FROM unnest($2::uuid[], $3::timestamptz[]) AS u(id, at)),
			locked AS MATERIALIZED (
				SELECT t.id FROM access_tokens t
				WHERE t.namespace_id = $1 AND t.id = ANY($2)
				ORDER BY t.id FOR NO KEY UPDATE)
			UPDATE access_tokens AS t SET last_used_at = u.at
			FROM u JOIN locked l ON l.id = u.id
			WHERE t.namespace_id = $1 AND t.id = u.id
			  AND (t.last_used_at IS NULL OR t.last_used_at < u.at)`,
			keys[i].ns, ids, ats)
		i = j
	}
	var changed int64
	err := s.WithTx(ctx, func(tx pgx.Tx) error {
		br := tx.SendBatch(ctx, batch)
		for range batch.Len() {
			tag, err := br.Exec()
			if err != nil {
				_ = br.Close()
				return fmt.Errorf("store: touch access tokens: %w", err)
			}
			changed += tag.RowsAffected()
		}
		return br.Close()
	})
	if err != nil {
		return 0, err
	}
	return changed, nil
}

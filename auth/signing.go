package auth

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/artifact-registry/artifact-registry/store"
)

// The keys that sign OCI bearer tokens are random and live in the
// database (store.SigningKeys), never derived from a configured secret:
// an issued token then says nothing about the admin token, and every
// instance signs and verifies with the same keys. A token names its key
// in the JWT "kid" header, so a rotation (store.RotateSigningKey, the
// `admin signing-key rotate` command) leaves the tokens signed with the
// previous key valid until they expire.
//
// Each instance caches the keys for KeyRefresh. A token whose kid is not
// in the cache triggers a reload at once (at most one per
// minKeyReloadGap, so forged kids cannot turn into a query each), so a
// token signed elsewhere with a new key verifies on its first use; an
// instance starts signing with a new key within KeyRefresh of the
// rotation.

// KeyRefresh is how long an instance signs with the key it last read:
// the bound on how late it follows a rotation made elsewhere.
const KeyRefresh = 30 * time.Second

// minKeyReloadGap bounds the reloads that unknown kids can cause.
const minKeyReloadGap = time.Second

// SigningKeyRetention is how long a retired signing key is kept: a token
// it signed lives at most DefaultBearerTTL, and an instance may go on
// signing with it for KeyRefresh after the rotation.
const SigningKeyRetention = DefaultBearerTTL + KeyRefresh + clockSkew

// keyStore is the store side of the keyring.
type keyStore interface {
	SigningKeys(ctx context.Context) ([]store.SigningKey, error)
	DeleteRetiredSigningKeys(ctx context.Context, retiredBefore time.Time) (int64, error)
}

// keyring is the per-instance cache of the signing keys.
type keyring struct {
	st        keyStore
	clock     store.Clock
	retention time.Duration
	onError   func(error)
	load      singleflight.Group

	mu       sync.RWMutex
	current  *store.SigningKey
	byID     map[string][]byte
	loadedAt time.Time
}

func newKeyring(st keyStore, clock store.Clock, retention time.Duration, onError func(error)) *keyring {
	return &keyring{st: st, clock: clock, retention: retention, onError: onError}
}

// signing returns the current key and its kid, reading the keys first
// when the cache is older than KeyRefresh.
func (k *keyring) signing(ctx context.Context) (string, []byte, error) {
	k.mu.RLock()
	cur, fresh := k.current, k.clock.Now().Sub(k.loadedAt) < KeyRefresh
	k.mu.RUnlock()
	if cur == nil || !fresh {
		if err := k.reload(ctx); err != nil && cur == nil {
			return "", nil, err
		}
		// A failed refresh keeps signing with the cached key: the keys a
		// replica already has stay valid while the database is away.
		k.mu.RLock()
		cur = k.current
		k.mu.RUnlock()
	}
	return kid(cur.ID), cur.Key, nil
}

// verifying returns the key named by a kid (nil when there is none).
func (k *keyring) verifying(ctx context.Context, id string) ([]byte, error) {
	k.mu.RLock()
	key, ok := k.byID[id]
	stale := k.clock.Now().Sub(k.loadedAt) >= minKeyReloadGap
	k.mu.RUnlock()
	if ok || !stale {
		return key, nil
	}
	if err := k.reload(ctx); err != nil {
		return nil, err
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.byID[id], nil
}

// reload reads the keys once for all concurrent callers.
func (k *keyring) reload(ctx context.Context) error {
	ch := k.load.DoChan("keys", func() (any, error) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
		defer cancel()
		return nil, k.read(lctx)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			k.onError(res.Err)
		}
		return res.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (k *keyring) read(ctx context.Context) error {
	keys, err := k.st.SigningKeys(ctx)
	if err != nil {
		return fmt.Errorf("auth: read the token signing keys: %w", err)
	}
	now := k.clock.Now()
	byID := make(map[string][]byte, len(keys))
	expired := false
	for i := range keys {
		if r := keys[i].RetiredAt; r != nil && now.Sub(*r) > k.retention {
			expired = true // no token it signed is alive: do not trust it
			continue
		}
		byID[kid(keys[i].ID)] = keys[i].Key
	}
	k.mu.Lock()
	k.current, k.byID, k.loadedAt = &keys[0], byID, now
	k.mu.Unlock()
	if expired {
		// Rotations delete them too; this covers instances that never rotate.
		if _, err := k.st.DeleteRetiredSigningKeys(ctx, now.Add(-k.retention)); err != nil {
			k.onError(err)
		}
	}
	return nil
}

func kid(id int64) string { return strconv.FormatInt(id, 10) }

// RotateSigningKey makes a new random key sign the OCI bearer tokens of
// every instance (within KeyRefresh); tokens signed with the previous key
// stay valid until they expire, and keys retired longer than
// SigningKeyRetention are deleted. It returns the new key's id (the kid of
// the tokens it signs).
func RotateSigningKey(ctx context.Context, st *store.Store) (string, error) {
	k, err := st.RotateSigningKey(ctx, SigningKeyRetention)
	if err != nil {
		return "", err
	}
	return kid(k.ID), nil
}

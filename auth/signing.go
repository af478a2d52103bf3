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
// Each instance caches the keys. With an invalidate.Listener a rotation
// made elsewhere is heard of at once and the next token is signed with
// the new key; while the Listener is not fresh the keys are read again
// for every token signed, and without one they are read every
// KeyRefresh. A token whose kid is newer than every cached key was signed
// elsewhere after a rotation not yet heard of here: it triggers a reload
// (at most one per minKeyReloadGap, waiting for the gap when needed, so
// forged kids cannot turn into a query each), so it verifies on its first
// use. A kid older than the newest cached key and not cached is refused
// without a query: keys are numbered in creation order, so that key was
// deleted. A retired key stops verifying SigningKeyRetention after its
// retirement, checked at each use.

// KeyRefresh is how long an instance without a Listener signs with the
// key it last read: the bound on how late it follows a rotation made
// elsewhere.
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
	// trusted (nil: always) says whether a change made elsewhere would
	// have been heard of (expire).
	trusted func() bool
	load    singleflight.Group

	mu       sync.RWMutex
	current  *store.SigningKey
	byID     map[int64]store.SigningKey
	newest   int64
	loadedAt time.Time
	// stale: a change was heard of after the cached keys were read.
	stale bool
	// gen counts expire calls, so a read that began before one does not
	// make its keys look fresh.
	gen uint64
}

func newKeyring(st keyStore, clock store.Clock, retention time.Duration, trusted func() bool, onError func(error)) *keyring {
	if trusted == nil {
		trusted = func() bool { return true }
	}
	return &keyring{st: st, clock: clock, retention: retention, trusted: trusted, onError: onError}
}

// expire makes the next signing read the keys again: they changed.
func (k *keyring) expire() {
	k.mu.Lock()
	k.stale = true
	k.gen++
	k.mu.Unlock()
}

// signing returns the current key and its kid, reading the keys first
// when they may have changed.
func (k *keyring) signing(ctx context.Context) (string, []byte, error) {
	k.mu.RLock()
	cur := k.current
	fresh := !k.stale && k.clock.Now().Sub(k.loadedAt) < KeyRefresh
	k.mu.RUnlock()
	if cur == nil || !fresh || !k.trusted() {
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
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil, nil
	}
	if key, known := k.lookup(n); known {
		return key, nil
	}
	// Newer than any key read here: wait out the reload gap, unless a
	// reload meanwhile brings it.
	k.mu.RLock()
	wait := k.loadedAt.Add(minKeyReloadGap).Sub(k.clock.Now())
	k.mu.RUnlock()
	if wait > 0 {
		t := time.NewTimer(min(wait, minKeyReloadGap))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		if key, known := k.lookup(n); known {
			return key, nil
		}
	}
	if err := k.reload(ctx); err != nil {
		return nil, err
	}
	key, _ := k.lookup(n)
	return key, nil
}

// lookup returns the key n if it verifies now; known is false when n is
// newer than every key read, so a reload may bring it.
func (k *keyring) lookup(n int64) (key []byte, known bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	sk, ok := k.byID[n]
	switch {
	case ok && sk.RetiredAt != nil && k.clock.Now().Sub(*sk.RetiredAt) > k.retention:
		return nil, true // no token it signed is alive
	case ok:
		return sk.Key, true
	}
	return nil, k.current != nil && n <= k.newest
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
	k.mu.RLock()
	gen := k.gen
	k.mu.RUnlock()
	keys, err := k.st.SigningKeys(ctx)
	if err != nil {
		return fmt.Errorf("auth: read the token signing keys: %w", err)
	}
	now := k.clock.Now()
	byID := make(map[int64]store.SigningKey, len(keys))
	var newest int64
	expired := false
	for _, key := range keys {
		newest = max(newest, key.ID)
		if r := key.RetiredAt; r != nil && now.Sub(*r) > k.retention {
			expired = true // no token it signed is alive: do not trust it
			continue
		}
		byID[key.ID] = key
	}
	k.mu.Lock()
	k.current, k.byID, k.newest, k.loadedAt = &keys[0], byID, newest, now
	k.stale = k.gen != gen
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

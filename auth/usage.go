package auth

import (
	"context"
	"sync"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
)

// usageBuffer keeps, per token, the latest time it was used since the
// last flush. The request path costs one map write under a mutex; the
// database sees one batched statement per flush (store.TouchAccessTokens),
// whatever the request rate. Times merge by max, so flushes from several
// replicas, late or repeated, never move last_used_at backwards.
type usageBuffer struct {
	mu sync.Mutex
	m  map[tokenKey]time.Time
}

func (b *usageBuffer) record(k tokenKey, at time.Time) {
	b.mu.Lock()
	if old, ok := b.m[k]; !ok || at.After(old) {
		b.m[k] = at
	}
	b.mu.Unlock()
}

// take empties the buffer.
func (b *usageBuffer) take() []store.AccessTokenUse {
	b.mu.Lock()
	m := b.m
	b.m = make(map[tokenKey]time.Time, len(m))
	b.mu.Unlock()
	out := make([]store.AccessTokenUse, 0, len(m))
	for k, at := range m {
		out = append(out, store.AccessTokenUse{NamespaceID: k.ns, TokenID: k.id, At: at})
	}
	return out
}

// restore puts uses back after a failed flush (merged by max).
func (b *usageBuffer) restore(uses []store.AccessTokenUse) {
	for _, u := range uses {
		b.record(tokenKey{u.NamespaceID, u.TokenID}, u.At)
	}
}

func (b *usageBuffer) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}

// Flush writes the buffered last_used_at values now (one store call, none
// when nothing was used). On failure the values stay buffered for the
// next flush.
func (a *Authenticator) Flush(ctx context.Context) error {
	uses := a.usage.take()
	if len(uses) == 0 {
		return nil
	}
	if _, err := a.tokens.TouchAccessTokens(ctx, uses); err != nil {
		a.usage.restore(uses)
		return err
	}
	return nil
}

// Run flushes last_used_at every FlushInterval until ctx ends, then once
// more (bounded by 5 s) so a clean shutdown loses nothing. Start it once
// per process: go authn.Run(ctx).
func (a *Authenticator) Run(ctx context.Context) {
	t := time.NewTicker(a.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := a.Flush(fctx); err != nil {
				a.opts.Logger.Warn("auth: final flush of token last-used times failed", "err", err)
			}
			cancel()
			return
		case <-t.C:
			if err := a.Flush(ctx); err != nil && ctx.Err() == nil {
				a.opts.Logger.Warn("auth: flush of token last-used times failed; retrying at the next flush", "err", err)
			}
		}
	}
}

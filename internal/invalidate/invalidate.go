// Package invalidate tells a process's caches what other instances
// changed. The triggers of migration 00059 notify Channel from the
// transaction that revokes a token, changes a namespace's state or a
// signing key, so a notification is sent only when the change commits; a
// Listener receives them on one dedicated connection per process and
// hands them to its subscribers.
//
// Notifications are lost while the connection is down, so a Listener
// also says whether it can be relied on (Fresh): it confirms the
// connection with a round trip every Heartbeat, and it is fresh only while
// the last confirmation is recent. A cache trusts its entries only while
// its Listener is fresh, and forgets them all when the Listener
// (re)connects (a Reset event). Together these bound how late a change
// committed elsewhere is honoured here (Bound), connection loss included.
//
// LISTEN needs a session: through a transaction-mode pooler the
// notifications are not delivered, the Listener never becomes fresh, and
// the caches go to the database on every request.
package invalidate

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Channel is the notification channel of the triggers.
const Channel = "ar_invalidate"

// Defaults of Options. With them a change committed on another instance
// is honoured here within Bound.
const (
	DefaultHeartbeat  = 200 * time.Millisecond
	DefaultMaxSilence = 600 * time.Millisecond
	// Bound is the documented and tested limit: MaxSilence plus the
	// delivery and the handling of one notification.
	Bound = time.Second
)

const (
	minBackoff     = 50 * time.Millisecond
	maxBackoff     = 5 * time.Second
	connectTimeout = 10 * time.Second
)

// Kind says what changed.
type Kind int

// Event kinds.
const (
	// Reset: anything may have changed (the listener connected, and what
	// was notified before is lost).
	Reset Kind = iota + 1
	// Token: a token was revoked, deleted, or its expiry or grants changed.
	Token
	// Namespace: a namespace was deleted, restored or purged, or a
	// service condition was imposed or lifted.
	Namespace
	// SigningKeys: a token signing key was created, retired or deleted.
	SigningKeys
)

// Event is one change.
type Event struct {
	Kind      Kind
	Namespace uuid.UUID // Token, Namespace
	Token     uuid.UUID // Token
}

// Parse reads a trigger's payload.
func Parse(payload string) (Event, error) {
	f := strings.Fields(payload)
	ids := func(n int) ([]uuid.UUID, error) {
		if len(f) != n+1 {
			return nil, fmt.Errorf("invalidate: payload %q: want %d ids", payload, n)
		}
		out := make([]uuid.UUID, n)
		for i := range out {
			id, err := uuid.Parse(f[i+1])
			if err != nil {
				return nil, fmt.Errorf("invalidate: payload %q: %w", payload, err)
			}
			out[i] = id
		}
		return out, nil
	}
	switch {
	case len(f) == 1 && f[0] == "signing-keys":
		return Event{Kind: SigningKeys}, nil
	case len(f) > 0 && f[0] == "token":
		id, err := ids(2)
		if err != nil {
			return Event{}, err
		}
		return Event{Kind: Token, Namespace: id[0], Token: id[1]}, nil
	case len(f) > 0 && f[0] == "namespace":
		id, err := ids(1)
		if err != nil {
			return Event{}, err
		}
		return Event{Kind: Namespace, Namespace: id[0]}, nil
	}
	return Event{}, fmt.Errorf("invalidate: unknown payload %q", payload)
}

// Options configure a Listener; zero values take the defaults.
type Options struct {
	// Heartbeat is the period of the round trips that confirm the
	// connection; MaxSilence how old the last confirmed one may be for
	// the Listener to be fresh.
	Heartbeat  time.Duration
	MaxSilence time.Duration
	Logger     *slog.Logger
}

// Listener receives the notifications of Channel. Safe for concurrent
// use; one per process, started with Run.
type Listener struct {
	cfg   *pgx.ConnConfig
	opts  Options
	epoch time.Time // monotonic origin of confirmed

	mu   sync.RWMutex
	subs []func(Event)

	// confirmed is when (since epoch, in ns) the last round trip that
	// succeeded was sent: every change committed before it has been
	// handed to the subscribers. 0: not listening.
	confirmed atomic.Int64
	pid       atomic.Uint32 // backend of the listening connection, 0: none
}

// New returns a Listener connecting with cfg (a copy is used).
func New(cfg *pgx.ConnConfig, opts Options) *Listener {
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.MaxSilence <= 0 {
		opts.MaxSilence = DefaultMaxSilence
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Listener{cfg: cfg.Copy(), opts: opts, epoch: time.Now()}
}

// Subscribe adds f, called for every event in the Listener's goroutine,
// in order; f must not block. Subscribe before Run.
func (l *Listener) Subscribe(f func(Event)) {
	l.mu.Lock()
	l.subs = append(l.subs, f)
	l.mu.Unlock()
}

// Fresh reports whether every change committed more than MaxSilence ago
// has been handed to the subscribers. A nil Listener is never fresh.
func (l *Listener) Fresh() bool {
	if l == nil {
		return false
	}
	c := l.confirmed.Load()
	return c != 0 && l.since()-c < int64(l.opts.MaxSilence)
}

// BackendPID is the PostgreSQL backend of the listening connection (0
// while there is none): tests terminate it.
func (l *Listener) BackendPID() uint32 { return l.pid.Load() }

func (l *Listener) since() int64 { return int64(time.Since(l.epoch)) + 1 }

func (l *Listener) publish(ev Event) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, f := range l.subs {
		f(ev)
	}
}

// Run listens until ctx ends, reconnecting with backoff.
func (l *Listener) Run(ctx context.Context) {
	backoff := minBackoff
	for ctx.Err() == nil {
		began := time.Now()
		err := l.session(ctx)
		l.confirmed.Store(0)
		l.pid.Store(0)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > maxBackoff {
			backoff = minBackoff
		}
		l.opts.Logger.Warn("invalidate: listening connection lost; caches bypassed until it is back", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// session listens on one connection until it fails.
func (l *Listener) session(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	conn, err := pgx.ConnectConfig(cctx, l.cfg)
	cancel()
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	sent := l.since()
	if err := l.roundTrip(ctx, conn, "LISTEN "+Channel); err != nil {
		return err
	}
	l.pid.Store(conn.PgConn().PID())
	// Whatever was notified before LISTEN is lost: subscribers start over.
	l.publish(Event{Kind: Reset})
	l.confirmed.Store(sent)
	next := time.Now().Add(l.opts.Heartbeat)
	for {
		wctx, cancel := context.WithDeadline(ctx, next)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			l.handle(n)
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		case !pgconn.Timeout(err) || conn.IsClosed():
			return fmt.Errorf("wait for notifications: %w", err)
		}
		sent := l.since()
		if err := l.roundTrip(ctx, conn, "SELECT 1"); err != nil {
			return err
		}
		l.confirmed.Store(sent)
		next = time.Now().Add(l.opts.Heartbeat)
	}
}

// roundTrip runs sql on conn, then hands over the notifications that
// arrived meanwhile: the server sends those committed before it answered
// ahead of the answer.
func (l *Listener) roundTrip(ctx context.Context, conn *pgx.Conn, sql string) error {
	rctx, cancel := context.WithTimeout(ctx, l.opts.MaxSilence)
	_, err := conn.Exec(rctx, sql)
	cancel()
	if err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	done, stop := context.WithCancel(ctx)
	stop()
	for {
		// With ctx done this returns the buffered ones without reading.
		n, _ := conn.WaitForNotification(done)
		if n == nil {
			return nil
		}
		l.handle(n)
	}
}

func (l *Listener) handle(n *pgconn.Notification) {
	if n == nil || n.Channel != Channel {
		return
	}
	ev, err := Parse(n.Payload)
	if err != nil {
		// An unknown payload (a newer release's) may concern anything.
		l.opts.Logger.Warn("invalidate: unknown notification; forgetting every cached entry", "err", err)
		ev = Event{Kind: Reset}
	}
	l.publish(ev)
}

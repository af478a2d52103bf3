package store

import (
	"context"
	"strings"
)

// The actor of a transaction is who or what makes its changes: a
// principal ("admin:<user>", "token:<id>") or a lifecycle policy
// ("policy:<id>"). The transaction carries it as the setting
// artifact_registry.actor, which the record_soft_deleted_by trigger copies
// into soft_deleted_by whenever a row goes to the trash, so the trash says
// who deleted each item whatever code path deleted it.

type actorKey struct{}

// maxActorLen matches the soft_deleted_by columns' CHECK.
const maxActorLen = 255

// WithActor returns ctx carrying the actor of the transactions begun with
// it. An empty actor removes it.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorFrom returns the actor of ctx ("" when none).
func ActorFrom(ctx context.Context) string {
	a, _ := ctx.Value(actorKey{}).(string)
	return a
}

// actorSQL is the statement appended to BEGIN that sets the actor for the
// transaction only (set_config's is_local), in the same round trip. The
// value is a quoted literal: standard_conforming_strings is on (the
// default since PostgreSQL 9.1), so doubling quotes is the whole escape;
// NUL, which no literal may hold, is dropped.
func actorSQL(ctx context.Context) string {
	a := ActorFrom(ctx)
	if a == "" {
		return ""
	}
	a = strings.ReplaceAll(a, "\x00", "")
	if r := []rune(a); len(r) > maxActorLen {
		a = string(r[:maxActorLen])
	}
	return "; SELECT set_config('artifact_registry.actor', '" + strings.ReplaceAll(a, "'", "''") + "', true)"
}

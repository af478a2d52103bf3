package store

import (
	"context"
	"strings"

	"github.com/artifact-registry/artifact-registry/store/internal/lazytx"
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

// actorSetting is the setting that names the actor for the transaction
// only (set_config's is_local), sent with its BEGIN; none without an
// actor. NUL, which no setting may hold, is dropped.
func actorSetting(ctx context.Context) []lazytx.Setting {
	a := ActorFrom(ctx)
	if a == "" {
		return nil
	}
	a = strings.ReplaceAll(a, "\x00", "")
	if r := []rune(a); len(r) > maxActorLen {
		a = string(r[:maxActorLen])
	}
	return []lazytx.Setting{{Name: "artifact_registry.actor", Value: a}}
}

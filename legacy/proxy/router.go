// Package proxy decides, for proxy mode (protocol/oci legacy_proxy.go),
// where a legacy repository path lives: the migration inventory first
// (migrated: here; importing: read-only window; otherwise the legacy
// registry), then, for a path the inventory does not know, the mapping
// rules and the include/exclude lists of the rollout.
package proxy

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/artifact-registry/artifact-registry/legacy/mapping"
	"github.com/artifact-registry/artifact-registry/protocol/oci"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/legacy"
)

// Router implements oci.LegacyRouter.
type Router struct {
	st     *store.Store
	legacy *legacy.Store
	rules  *mapping.Rules
	local  func(path string) bool
	// migrated caches routes of migrated repositories: migrated is final,
	// so the hottest names skip the database.
	migrated sync.Map // legacy path -> target
	// migratedTargets caches target names whose repository is migrated
	// (final): the hottest local names skip the database.
	migratedTargets sync.Map // target -> struct{}
}

// New builds a Router. local decides whether a path not in the inventory
// is created here (true) or in the legacy registry.
func New(st *store.Store, rules *mapping.Rules, local func(path string) bool) *Router {
	return &Router{st: st, legacy: legacy.New(st), rules: rules, local: local}
}

var _ oci.LegacyRouter = (*Router)(nil)

// Route decides where path lives. A write to a new name placed here by
// the include/exclude lists creates its hosted repository (private,
// docker) first, so the first push of a new repository works.
func (r *Router) Route(ctx context.Context, path string, write bool) (oci.LegacyRoute, error) {
	if t, ok := r.migrated.Load(path); ok {
		return oci.LegacyRoute{Decision: oci.LegacyLocal, Target: t.(string)}, nil
	}
	row, found, err := r.legacy.Route(ctx, path)
	if err != nil {
		return oci.LegacyRoute{}, err
	}
	route := r.decide(path, row, found)
	if write && !found && route.Decision == oci.LegacyLocal {
		t, _ := r.rules.Map(path)
		if err := r.ensure(ctx, t); err != nil {
			return oci.LegacyRoute{}, err
		}
	}
	return route, nil
}

// ensure creates the hosted repository of a new name unless it is active.
// It asks the database every time rather than remembering what it
// created: the repository may since have been deleted, here or on another
// instance, and then every instance must create it again alike.
func (r *Router) ensure(ctx context.Context, t mapping.Target) error {
	key := t.Namespace + "/" + t.Repository
	_, _, err := r.st.RepositoryByName(ctx, t.Namespace, t.Repository)
	if err == nil {
		return nil
	}
	if !store.HasCode(err, store.CodeNotFound) {
		return fmt.Errorf("look up repository %s for a new legacy name: %w", key, err)
	}
	_, err = r.st.CreateRepository(ctx, store.NewRepository{Namespace: t.Namespace, Name: t.Repository,
		Format: enum.FormatDocker, Kind: enum.KindHosted, Visibility: enum.VisibilityPrivate})
	switch store.CodeOf(err) {
	case store.CodeAlreadyExists:
		err = nil
	case store.CodeNotFound:
		return &store.Error{Code: container.CodeNameUnknown, Message: fmt.Sprintf("container repository unknown: namespace %q of the new repository does not exist", t.Namespace)}
	}
	if err != nil {
		return fmt.Errorf("create repository %s for a new legacy name: %w", key, err)
	}
	return nil
}

// GuardWrite decides under a share lock of the inventory row (see
// legacy.WithRouteShared) and calls fn inside it.
func (r *Router) GuardWrite(ctx context.Context, path string, fn func(oci.LegacyRoute) error) error {
	err := r.legacy.WithRouteShared(ctx, path, func(row legacy.RouteRow, found bool) error {
		return fn(r.decide(path, row, found))
	})
	if err != nil {
		return fmt.Errorf("legacy write guard %q: %w", path, err)
	}
	return nil
}

// HeldTarget reports whether name, served here as is, is the target of an
// inventoried repository that is not migrated yet (any status but
// migrated: its local copy is half imported or absent), with that
// repository's legacy path. Names that are not <namespace>/<repository>/
// <image> of an existing namespace are not held.
func (r *Router) HeldTarget(ctx context.Context, name string) (string, bool, error) {
	if _, ok := r.migratedTargets.Load(name); ok {
		return "", false, nil
	}
	parts := strings.SplitN(name, "/", 3)
	if len(parts) < 3 {
		return "", false, nil
	}
	ns, err := r.st.NamespaceBySlug(ctx, parts[0])
	if store.KindOf(err) == store.KindNotFound {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("legacy target %q: %w", name, err)
	}
	row, err := r.legacy.RepositoryByTarget(ctx, ns.ID, parts[1], parts[2])
	switch {
	case store.HasCode(err, legacy.CodeRepositoryUnknown):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("legacy target %q: %w", name, err)
	case row.Status == enum.LegacyMigrated:
		r.migratedTargets.Store(name, struct{}{})
		return "", false, nil
	}
	return row.LegacyPath, true, nil
}

func (r *Router) decide(path string, row legacy.RouteRow, found bool) oci.LegacyRoute {
	if !found {
		t, ok := r.rules.Map(path)
		if !ok {
			return oci.LegacyRoute{Decision: oci.LegacyNotMapped}
		}
		target := t.Namespace + "/" + t.Repository + "/" + t.Image
		if r.local(path) {
			return oci.LegacyRoute{Decision: oci.LegacyLocal, Target: target}
		}
		return oci.LegacyRoute{Decision: oci.LegacyForward, Target: target}
	}
	target := row.NamespaceSlug + "/" + row.RepositoryName + "/" + row.ImageName
	switch row.Status {
	case enum.LegacyMigrated:
		r.migrated.Store(path, target)
		return oci.LegacyRoute{Decision: oci.LegacyLocal, Target: target}
	case enum.LegacyImporting:
		return oci.LegacyRoute{Decision: oci.LegacyReadOnly, Target: target}
	default:
		return oci.LegacyRoute{Decision: oci.LegacyForward, Target: target}
	}
}

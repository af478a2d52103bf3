package auth

import (
	"strings"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/maven"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// Adapters from the store's rows and the protocols' resolved targets to a
// Target, so every surface builds its decision input the same way.

// NamespaceOf converts a namespaces row (GraphQL, management).
func NamespaceOf(ns *store.Namespace) Namespace {
	return Namespace{
		ID:        ns.ID,
		Slug:      ns.Slug,
		Deleted:   ns.DeletedAt != nil,
		Purged:    ns.PurgedAt != nil,
		Blocked:   ns.BlockedAt != nil,
		Disabled:  ns.DisabledAt != nil,
		Suspended: ns.SuspendedAt != nil,
	}
}

// RepositoryOf converts a repositories row.
func RepositoryOf(r *store.Repository) *Repository {
	return &Repository{ID: r.ID, Name: r.Name, Visibility: r.Visibility}
}

// NamespaceTarget is the namespace itself as the target.
func NamespaceTarget(ns *store.Namespace) Target { return Target{Namespace: NamespaceOf(ns)} }

// RepositoryTarget is a repository of a namespace as the target.
func RepositoryTarget(ns *store.Namespace, r *store.Repository) Target {
	return Target{Namespace: NamespaceOf(ns), Repository: RepositoryOf(r)}
}

// fromServing rebuilds the conditions from what the protocol resolvers
// report: the first condition by priority and the two serving predicates
// (deleted and purged namespaces do not resolve there). The first
// condition decides both predicates, so nothing is lost.
func fromServing(id uuid.UUID, slug, condition string, servesReads, servesWrites bool) Namespace {
	ns := Namespace{ID: id, Slug: slug}
	switch strings.ToLower(condition) {
	case "blocked":
		ns.Blocked = true
	case "disabled":
		ns.Disabled = true
	case "suspended":
		ns.Suspended = true
	}
	// Never serve more than the predicates say, whatever the label.
	if !servesReads && !ns.Blocked && !ns.Disabled {
		ns.Blocked = true
	}
	if !servesWrites && servesReads {
		ns.Suspended = true
	}
	return ns
}

// ContainerTarget converts a resolved /v2/<namespace>/<repository>/... name.
func ContainerTarget(t *container.Target) Target {
	return Target{
		Namespace:  fromServing(t.NamespaceID, t.NamespaceSlug, t.NamespaceState, t.ServesReads, t.ServesWrites),
		Repository: &Repository{ID: t.RepositoryID, Name: t.RepositoryName, Visibility: t.Visibility},
	}
}

// MavenTarget converts a resolved /maven/<namespace>/<repository>.
func MavenTarget(t *maven.Target) Target {
	return Target{
		Namespace:  fromServing(t.NamespaceID, t.NamespaceSlug, t.NamespaceCondition, t.ServesReads, t.ServesWrites),
		Repository: &Repository{ID: t.RepositoryID, Name: t.RepositoryName, Visibility: t.Visibility},
	}
}

// NpmTarget converts a resolved /npm/<namespace>/<repository>.
func NpmTarget(r *npmstore.Repository) Target {
	return Target{
		Namespace:  fromServing(r.NamespaceID, r.NamespaceSlug, r.Condition, r.ServesReads, r.ServesWrites),
		Repository: &Repository{ID: r.RepositoryID, Name: r.RepositoryName, Visibility: r.Visibility},
	}
}

package graph

import (
	"context"
	"errors"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store"
)

// Authorization of the management API. The caller is an *auth.Principal
// (set by NewHandler from the Authorization header); every decision is
// auth.Authorize, the one used by every protocol, so GraphQL and the
// registries agree on what a token may do. Three levels:
//
//   - instance operations (namespaces list, create, delete and conditions,
//     the garbage-collection controls) need the admin token (requireSuperUser);
//   - namespace administration (repositories, collections, tokens, trash,
//     statistics, history) needs auth.ActionAdmin or ActionAdminRead on the
//     namespace: the admin token or an ADMIN token of the namespace;
//   - reads follow visibility (auth.ReadableRepositories for lists).

func principal(ctx context.Context) *auth.Principal { return auth.FromContext(ctx) }

func isAdmin(ctx context.Context) bool { return principal(ctx).IsAdmin() }

// requireSuperUser guards instance-wide operations.
func requireSuperUser(ctx context.Context) error {
	p := principal(ctx)
	switch {
	case p.IsAdmin():
		return nil
	case p.IsAnonymous():
		return newError(CodeUnauthenticated, "authentication required: send Authorization: Bearer <admin token>")
	}
	return newError(CodeForbidden, "only the admin token may do this; %s is a namespace access token", p.Name())
}

// requireCredential refuses anonymous callers before any lookup, so a
// change asked without credentials is UNAUTHENTICATED whether or not its
// target exists.
func requireCredential(ctx context.Context) error {
	if principal(ctx).IsAnonymous() {
		return newError(CodeUnauthenticated, "authentication required: send Authorization: Bearer <token>")
	}
	return nil
}

// namespaceOfModel is the decision input of a resolved namespace.
func namespaceOfModel(n *model.Namespace) auth.Namespace {
	return auth.Namespace{
		ID:        n.ID,
		Slug:      n.Slug,
		Deleted:   n.DeletedAt != nil,
		Purged:    n.PurgedAt != nil,
		Blocked:   n.BlockedAt != nil,
		Disabled:  n.DisabledAt != nil,
		Suspended: n.SuspendedAt != nil,
	}
}

// authorizeNamespace decides an action on a resolved namespace itself.
func authorizeNamespace(ctx context.Context, n *model.Namespace, action auth.Action) error {
	return auth.Authorize(ctx, principal(ctx), action, auth.Target{Namespace: namespaceOfModel(n)})
}

// namespaceFor looks a namespace up by slug and authorizes action on it.
// Anonymous callers are refused before the lookup for anything but reads.
func (r *Resolver) namespaceFor(ctx context.Context, slug string, action auth.Action) (*store.Namespace, error) {
	if action != auth.ActionRead {
		if err := requireCredential(ctx); err != nil {
			return nil, err
		}
	}
	ns, err := r.store.NamespaceBySlug(ctx, slug)
	if err != nil {
		return nil, err
	}
	if err := auth.Authorize(ctx, principal(ctx), action, auth.NamespaceTarget(ns)); err != nil {
		return nil, err
	}
	return ns, nil
}

// repositoryFor resolves a repository (trash included) and authorizes
// action on it. The super-user skips the lookup: the store resolves the
// reference itself. A repository the caller could not see answers as
// auth.MaskNotFound says, so names cannot be probed.
func (r *Resolver) repositoryFor(ctx context.Context, ref store.RepositoryRef, action auth.Action) error {
	p := principal(ctx)
	if p.IsAdmin() {
		return nil
	}
	if err := requireCredential(ctx); err != nil {
		return err
	}
	ns, repo, err := r.store.RepositoryByRef(ctx, ref)
	if isNotFound(err) {
		return auth.MaskNotFound(p, ref.Namespace, err)
	}
	if err != nil {
		return err
	}
	return auth.Authorize(ctx, p, action, auth.RepositoryTarget(ns, repo))
}

func isNotFound(err error) bool {
	return store.KindOf(err) == store.KindNotFound
}

// authError presents a decision error of package auth (ok false for
// other errors). The message is the decision's own, written for clients.
func authError(err error) (code, msg string, reason auth.Reason, ok bool) {
	code = auth.GraphQLCode(err)
	if code == "" {
		return "", "", "", false
	}
	var nu *auth.NamespaceUnavailableError
	var ae *auth.Error
	switch {
	case errors.As(err, &nu):
		msg = nu.Error()
		if !nu.NotFound() {
			reason = nu.Reason
		}
	case errors.As(err, &ae):
		msg = ae.Message
	default:
		msg = err.Error()
	}
	return code, msg, reason, true
}

package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store/enum"
)

// Action is what a request wants to do with its target.
type Action uint8

const (
	// ActionRead: pull, download, list, read through the API.
	ActionRead Action = iota
	// ActionWrite: push, publish, deploy, tag, mount into.
	ActionWrite
	// ActionDelete: delete or unpublish artifacts, delete tags.
	ActionDelete
	// ActionAdmin: administration that changes something: create, update,
	// trash, restore and purge repositories (namespace or repository
	// target), create and revoke tokens (namespace target).
	ActionAdmin
	// ActionAdminRead: administration that only looks: list tokens, read
	// settings. Also the super-user's view of a namespace that is not
	// serving (see Authorize).
	ActionAdminRead
)

var actionNames = [...]string{"read", "write", "delete", "admin", "admin-read"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

func (a Action) valid() bool { return int(a) < len(actionNames) }

// changes reports whether the action writes, so that it needs the write
// serving predicate (all five conditions NULL).
func (a Action) changes() bool { return a == ActionWrite || a == ActionDelete || a == ActionAdmin }

// scope is the token scope the action needs.
func (a Action) scope() enum.TokenScope {
	switch a {
	case ActionWrite:
		return enum.TokenScopeWrite
	case ActionDelete:
		return enum.TokenScopeDelete
	case ActionAdmin, ActionAdminRead:
		return enum.TokenScopeAdmin
	}
	return enum.TokenScopeRead
}

func (a Action) verb() string {
	switch a {
	case ActionWrite:
		return "write to"
	case ActionDelete:
		return "delete from"
	case ActionAdmin:
		return "administer"
	case ActionAdminRead:
		return "view the administration of"
	}
	return "read"
}

// Namespace is the target namespace as a decision needs it: the row's id,
// slug and service conditions (docs/schema.md "Status columns and
// serving"; true = the column is not NULL).
type Namespace struct {
	ID        uuid.UUID
	Slug      string
	Deleted   bool
	Purged    bool
	Blocked   bool
	Disabled  bool
	Suspended bool
}

// unavailable names the condition that refuses a read (changes false) or
// a change (changes true), "" if none: reads need deleted, purged, blocked
// and disabled clear; changes need suspended clear too. Priority as in
// the derived status (purged, deleted, blocked, disabled, suspended).
func (n Namespace) unavailable(changes bool) Reason {
	switch {
	case n.Purged:
		return ReasonPurged
	case n.Deleted:
		return ReasonDeleted
	case n.Blocked:
		return ReasonBlocked
	case n.Disabled:
		return ReasonDisabled
	case changes && n.Suspended:
		return ReasonSuspended
	}
	return ""
}

// Repository is the target repository: id, name and visibility.
type Repository struct {
	ID         uuid.UUID
	Name       string
	Visibility enum.Visibility
}

// Target is what an action applies to: a namespace, and a repository of
// it unless the action is about the namespace itself (creating
// repositories or tokens, listing).
type Target struct {
	Namespace  Namespace
	Repository *Repository
}

func (t Target) String() string {
	if t.Repository == nil {
		return fmt.Sprintf("namespace %q", t.Namespace.Slug)
	}
	return fmt.Sprintf("repository %s/%s", t.Namespace.Slug, t.Repository.Name)
}

// Authorize is the one access decision of every surface. nil allows the
// action; otherwise the error matches ErrUnauthenticated, ErrForbidden or
// ErrNamespaceUnavailable (see errors.go for the statuses). A nil p is
// anonymous. The checks, in order:
//
//  1. A token whose own namespace is blocked or disabled gets nothing,
//     anywhere: ErrNamespaceUnavailable naming its namespace.
//  2. Permission (visibility, scopes, repository restriction):
//     - the super-user may do everything;
//     - reads of a PUBLIC repository and of the namespace itself (its
//     listings then filtered with ReadableRepositories) are open to all;
//     - reads of an INTERNAL repository need any valid token of this
//     instance, from any namespace, that is not restricted to a
//     repository list (a restricted token reads INTERNAL repositories of
//     its own namespace only if listed);
//     - reads of a PRIVATE repository need a READ token of its namespace;
//     - writes need WRITE, deletes DELETE, administration ADMIN, always
//     by a token of the target's namespace; a token restricted to a
//     repository list acts only on listed repositories, and never on the
//     namespace itself except to read it;
//     - scope implications: every scope implies READ, ADMIN implies all.
//     Refusals are ErrUnauthenticated for anonymous callers (so clients
//     retry with credentials) and ErrForbidden for the others.
//  3. Service conditions of the target namespace (the serving predicate,
//     docs/schema.md "Status columns and serving"): reads need deleted,
//     purged, blocked and disabled clear, writes, deletes and
//     administration need all five clear, so a suspended namespace stays
//     readable. The super-user's
//     administration (ActionAdmin, ActionAdminRead) is exempt: it is how
//     conditions are inspected and lifted. Its reads and writes are not.
//  4. An OCI bearer token (TokenHandler) must have been issued for the
//     repository and action; otherwise ErrUnauthenticated with
//     InsufficientScope, and the client fetches a token for the scope of
//     the challenge.
//
// ctx is not used yet (it is there for audit and tracing).
func Authorize(ctx context.Context, p *Principal, action Action, t Target) error {
	_ = ctx
	if !action.valid() {
		return forbidden("unknown action %d", action)
	}
	if p == nil {
		p = anonymous
	}
	if p.kind == KindToken && p.tok.nsReason != "" {
		return &NamespaceUnavailableError{Namespace: p.tok.nsSlug, Reason: p.tok.nsReason, Action: action}
	}
	if err := permit(p, action, t); err != nil {
		return err
	}
	if !(p.kind == KindAdmin && (action == ActionAdmin || action == ActionAdminRead)) {
		if r := t.Namespace.unavailable(action.changes()); r != "" {
			return &NamespaceUnavailableError{Namespace: t.Namespace.Slug, Reason: r, Action: action}
		}
	}
	if p.grants != nil && !p.granted(action, t) {
		return &Error{Kind: ErrUnauthenticated, InsufficientScope: true,
			Message: fmt.Sprintf("the bearer token was not issued to %s %s: request a token for this scope", action.verb(), t)}
	}
	return nil
}

// permit is step 2 of Authorize.
func permit(p *Principal, action Action, t Target) error {
	repo := t.Repository
	switch p.kind {
	case KindAdmin:
		return nil
	case KindAnonymous:
		if action == ActionRead && (repo == nil || repo.Visibility == enum.VisibilityPublic) {
			return nil
		}
		return unauthenticated("authentication required to %s %s", action.verb(), t)
	}
	tok := p.tok
	own := tok.nsID == t.Namespace.ID
	if action == ActionRead {
		if repo == nil || repo.Visibility == enum.VisibilityPublic {
			return nil
		}
		switch repo.Visibility {
		case enum.VisibilityInternal:
			if own && tok.covers(repo.ID) || !own && !tok.restricted() {
				return nil
			}
		case enum.VisibilityPrivate:
			if own && tok.covers(repo.ID) && tok.effective.has(enum.TokenScopeRead) {
				return nil
			}
		}
		if own {
			return forbidden("the token is restricted to other repositories than %s", t)
		}
		if repo.Visibility == enum.VisibilityInternal {
			return forbidden("the token is restricted to repositories of namespace %q: it cannot read %s", tok.nsSlug, t)
		}
		return forbidden("a token of namespace %q cannot read %s", tok.nsSlug, t)
	}
	if !own {
		return forbidden("a token of namespace %q cannot %s %s", tok.nsSlug, action.verb(), t)
	}
	if repo == nil && tok.restricted() {
		return forbidden("the token is restricted to some repositories: it cannot %s %s", action.verb(), t)
	}
	if repo != nil && !tok.covers(repo.ID) {
		return forbidden("the token is restricted to other repositories than %s", t)
	}
	if need := action.scope(); !tok.effective.has(need) {
		return forbidden("the token lacks the %s scope needed to %s %s (it has %s)",
			strings.ToUpper(need.String()), action.verb(), t, scopeList(tok.scopes))
	}
	return nil
}

func scopeList(scopes []enum.TokenScope) string {
	names := make([]string, len(scopes))
	for i, s := range scopes {
		names[i] = strings.ToUpper(s.String())
	}
	return strings.Join(names, ", ")
}

// RepositoryFilter is the set of repositories of one namespace a principal
// may read: every repository (All), or those whose visibility is in
// Visibilities, plus those whose id is in IDs. A listing query filters with
//
//	All OR visibility = ANY(Visibilities) OR id = ANY(IDs)
//
// which agrees with Authorize(ActionRead) on each repository (the
// namespace's own conditions are checked by Authorize on the namespace
// target first).
type RepositoryFilter struct {
	All          bool
	Visibilities []enum.Visibility
	IDs          []uuid.UUID
}

// Allows reports whether the filter admits a repository.
func (f RepositoryFilter) Allows(r Repository) bool {
	if f.All {
		return true
	}
	for _, v := range f.Visibilities {
		if r.Visibility == v {
			return true
		}
	}
	for _, id := range f.IDs {
		if r.ID == id {
			return true
		}
	}
	return false
}

// ReadableRepositories returns the filter of the repositories of ns that
// p may read (for repository listings, catalogs and search). For an OCI
// bearer principal it is the filter of the identity the token was issued
// to. A token whose own namespace is blocked or disabled reads nothing.
func ReadableRepositories(p *Principal, ns Namespace) RepositoryFilter {
	public := []enum.Visibility{enum.VisibilityPublic}
	switch p.Kind() {
	case KindAdmin:
		return RepositoryFilter{All: true}
	case KindAnonymous:
		return RepositoryFilter{Visibilities: public}
	}
	tok := p.tok
	switch {
	case tok.nsReason != "":
		return RepositoryFilter{}
	case tok.nsID == ns.ID && !tok.restricted():
		return RepositoryFilter{All: true}
	case tok.nsID == ns.ID:
		return RepositoryFilter{Visibilities: public, IDs: p.RepositoryIDs()}
	case !tok.restricted():
		return RepositoryFilter{Visibilities: []enum.Visibility{enum.VisibilityPublic, enum.VisibilityInternal}}
	}
	return RepositoryFilter{Visibilities: public}
}

// MaskNotFound is what a surface returns when the namespace or repository
// a request names does not exist (notFound is the store's error): callers
// who could not read a private repository of that name get the same answer
// as for one that exists (ErrUnauthenticated when anonymous, so clients
// send credentials; ErrForbidden for other tokens), so names cannot be
// probed. The super-user and unrestricted tokens of that namespace get
// notFound itself.
func MaskNotFound(p *Principal, namespaceSlug string, notFound error) error {
	switch p.Kind() {
	case KindAdmin:
		return notFound
	case KindAnonymous:
		return unauthenticated("authentication required (or the repository does not exist)")
	}
	if p.tok.nsReason != "" {
		return &NamespaceUnavailableError{Namespace: p.tok.nsSlug, Reason: p.tok.nsReason, Action: ActionRead}
	}
	if p.tok.nsSlug == namespaceSlug && !p.tok.restricted() {
		return notFound
	}
	return forbidden("access denied (or the repository does not exist)")
}

// IsDecision reports whether err is one of the decision errors (as opposed
// to an internal failure).
func IsDecision(err error) bool {
	return errors.Is(err, ErrUnauthenticated) || errors.Is(err, ErrForbidden) || errors.Is(err, ErrNamespaceUnavailable) ||
		errors.Is(err, ErrRateLimited)
}

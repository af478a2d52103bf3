package auth

import (
	"errors"
	"fmt"
	"net/http"
)

// The decision errors. Every refusal Authenticate or Authorize returns
// matches exactly one of them with errors.Is, and its Error() is a message
// meant for the client (it never contains a secret):
//
//   - ErrUnauthenticated: no usable credential (none where one is needed,
//     malformed, unknown, expired or revoked token, or an OCI bearer token
//     lacking the scope). HTTP 401 with a challenge; GraphQL UNAUTHENTICATED.
//   - ErrForbidden: a valid credential that does not allow the action.
//     HTTP 403; GraphQL FORBIDDEN.
//   - ErrNamespaceUnavailable (a *NamespaceUnavailableError): the
//     namespace's status columns refuse the action (docs/schema.md
//     "Status columns and serving"). Deleted and purged namespaces
//     are 404 (they do not exist for clients); blocked, disabled and
//     suspended ones are 403 with the message saying why. See HTTPStatus.
//   - ErrRateLimited (a *RateLimitedError): the client's address failed
//     to authenticate too often (ratelimit.go). HTTP 429 with Retry-After
//     (RetryAfterSeconds); GraphQL RATE_LIMITED.
var (
	ErrUnauthenticated      = errors.New("authentication required")
	ErrForbidden            = errors.New("access denied")
	ErrNamespaceUnavailable = errors.New("namespace unavailable")
)

// Error is a refusal with its client message; Kind is ErrUnauthenticated
// or ErrForbidden.
type Error struct {
	Kind    error
	Message string
	// InsufficientScope is set on the ErrUnauthenticated of an OCI bearer
	// token that is valid but was not issued for this repository and
	// action: the client should fetch a new token for the scope named in
	// the challenge (see OCIBearerChallenge).
	InsufficientScope bool
	// reason labels a failed authentication in the metrics.
	reason string
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Kind }

func unauthenticated(format string, args ...any) *Error {
	return &Error{Kind: ErrUnauthenticated, Message: fmt.Sprintf(format, args...)}
}

// failure is an ErrUnauthenticated of a presented credential, with its
// metric label.
func failure(reason, format string, args ...any) *Error {
	e := unauthenticated(format, args...)
	e.reason = reason
	return e
}

func forbidden(format string, args ...any) *Error {
	return &Error{Kind: ErrForbidden, Message: fmt.Sprintf(format, args...)}
}

// Reason is the service condition that makes a namespace unavailable.
type Reason string

const (
	ReasonPurged    Reason = "purged"
	ReasonDeleted   Reason = "deleted"
	ReasonBlocked   Reason = "blocked"
	ReasonDisabled  Reason = "disabled"
	ReasonSuspended Reason = "suspended"
)

// NamespaceUnavailableError says that a namespace's service conditions
// refuse an action. errors.Is(err, ErrNamespaceUnavailable) holds.
type NamespaceUnavailableError struct {
	Namespace string // slug
	Reason    Reason
	Action    Action
}

func (e *NamespaceUnavailableError) Error() string {
	switch e.Reason {
	case ReasonPurged, ReasonDeleted:
		return fmt.Sprintf("namespace %q not found", e.Namespace)
	case ReasonBlocked:
		return fmt.Sprintf("namespace %q is blocked: its repositories are not served", e.Namespace)
	case ReasonDisabled:
		return fmt.Sprintf("namespace %q is disabled by its organization: its repositories are not served", e.Namespace)
	case ReasonSuspended:
		return fmt.Sprintf("namespace %q is suspended and read-only: downloads work, changes are refused until the suspension is lifted", e.Namespace)
	}
	return fmt.Sprintf("namespace %q is unavailable (%s)", e.Namespace, e.Reason)
}

// Is makes errors.Is(err, ErrNamespaceUnavailable) hold.
func (e *NamespaceUnavailableError) Is(target error) bool { return target == ErrNamespaceUnavailable }

// NotFound reports whether the namespace is deleted or purged, which
// clients see as "does not exist".
func (e *NamespaceUnavailableError) NotFound() bool {
	return e.Reason == ReasonDeleted || e.Reason == ReasonPurged
}

// HTTPStatus maps a decision error to the status every HTTP surface uses:
// 401, 403, 429, or 404 for a deleted or purged namespace; 0 for an error that
// is not a decision error (an internal failure: 500, or 503 for
// store.CodeRetryable, as the surface does already).
func HTTPStatus(err error) int {
	var nu *NamespaceUnavailableError
	switch {
	case err == nil:
		return http.StatusOK
	case errors.As(err, &nu):
		if nu.NotFound() {
			return http.StatusNotFound
		}
		return http.StatusForbidden
	case errors.Is(err, ErrRateLimited):
		return http.StatusTooManyRequests
	case errors.Is(err, ErrUnauthenticated):
		return http.StatusUnauthorized
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	}
	return 0
}

// GraphQL error codes (extensions.code) of the decision errors.
const (
	CodeUnauthenticated      = "UNAUTHENTICATED"
	CodeForbidden            = "FORBIDDEN"
	CodeNotFound             = "NOT_FOUND"
	CodeNamespaceUnavailable = "NAMESPACE_UNAVAILABLE"
	CodeCSRFToken            = "CSRF_TOKEN_INVALID"
	CodeRateLimited          = "RATE_LIMITED"
)

// GraphQLCode maps a decision error to its extensions.code ("" for other
// errors). NAMESPACE_UNAVAILABLE comes with extensions.reason (Reason).
func GraphQLCode(err error) string {
	var nu *NamespaceUnavailableError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &nu):
		if nu.NotFound() {
			return CodeNotFound
		}
		return CodeNamespaceUnavailable
	case errors.Is(err, ErrCSRFToken):
		return CodeCSRFToken
	case errors.Is(err, ErrRateLimited):
		return CodeRateLimited
	case errors.Is(err, ErrUnauthenticated):
		return CodeUnauthenticated
	case errors.Is(err, ErrForbidden):
		return CodeForbidden
	}
	return ""
}

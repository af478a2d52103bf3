package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/artifact-registry/artifact-registry/store"
)

// Error codes in extensions.code (package auth adds NAMESPACE_UNAVAILABLE,
// with extensions.reason, for blocked, disabled and suspended namespaces;
// limits.go adds the request and document limits' codes and TIMEOUT).
const (
	CodeNotFound        = "NOT_FOUND"
	CodeAlreadyExists   = "ALREADY_EXISTS"
	CodeInvalidInput    = "INVALID_INPUT"
	CodeForbidden       = "FORBIDDEN"
	CodeUnauthenticated = "UNAUTHENTICATED"
	CodeConflict        = "CONFLICT"
	CodeInternal        = "INTERNAL"
	// CodeUnavailable: the database cannot be reached; the response is a
	// 503 with Retry-After.
	CodeUnavailable = "UNAVAILABLE"
)

// apiError is an error whose message is safe to show the client.
type apiError struct {
	code string
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func newError(code, format string, args ...any) error {
	return &apiError{code: code, msg: fmt.Sprintf(format, args...)}
}

func invalidInput(format string, args ...any) error {
	return newError(CodeInvalidInput, format, args...)
}

func notFound(format string, args ...any) error { return newError(CodeNotFound, format, args...) }

// errorPresenter maps every error to a GraphQL error with extensions.code.
// Store errors (store.Error) and API errors keep their message;
// errors gqlgen raised itself (parse, validation, complexity) keep theirs;
// anything else is logged and reported as a generic INTERNAL error, so no
// SQL or driver detail reaches the client.
func errorPresenter(log *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		gqlErr := graphql.DefaultErrorPresenter(ctx, err)
		var (
			ae *apiError
			se *store.Error
		)
		if code, msg, reason, ok := authError(err); ok {
			gqlErr.Message = msg
			setCode(gqlErr, code)
			if reason != "" {
				gqlErr.Extensions["reason"] = string(reason)
			}
			return gqlErr
		}
		switch {
		case store.IsUnavailable(err):
			markUnavailable(ctx)
			gqlErr.Message = store.UnavailableMessage(err)
			setCode(gqlErr, CodeUnavailable)
		case errors.As(err, &ae):
			gqlErr.Message = ae.msg
			setCode(gqlErr, ae.code)
		case store.HasCode(err, store.CodeRetryable):
			// Lock timeout or deadlock: nothing was changed.
			gqlErr.Message = "the resource is busy with a concurrent change; retry"
			setCode(gqlErr, CodeConflict)
		case errors.As(err, &se):
			gqlErr.Message = se.Message
			setCode(gqlErr, string(se.Code.Kind))
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
			// Whatever failed once the operation's deadline passed failed
			// because of it (drivers do not always wrap the context error).
			gqlErr.Message = "the operation exceeded its time limit"
			setCode(gqlErr, CodeTimeout)
		case errors.Is(err, context.Canceled):
			gqlErr.Message = "request cancelled"
			setCode(gqlErr, CodeInternal)
		default:
			var ge *gqlerror.Error
			if errors.As(err, &ge) && ge.Unwrap() == nil {
				// Raised by gqlgen itself (argument coercion, validation,
				// complexity): the message is about the request.
				if gqlErr.Extensions == nil || gqlErr.Extensions["code"] == nil {
					setCode(gqlErr, CodeInvalidInput)
				}
				return gqlErr
			}
			log.ErrorContext(ctx, "graphql: internal error", "path", gqlErr.Path.String(), "err", err)
			gqlErr.Message = "internal error"
			setCode(gqlErr, CodeInternal)
		}
		return gqlErr
	}
}

func setCode(e *gqlerror.Error, code string) {
	if e.Extensions == nil {
		e.Extensions = map[string]any{}
	}
	e.Extensions["code"] = code
}

// recoverFunc turns a resolver panic into a logged INTERNAL error.
func recoverFunc(log *slog.Logger) graphql.RecoverFunc {
	return func(ctx context.Context, p any) error {
		log.ErrorContext(ctx, "graphql: resolver panic", "panic", fmt.Sprint(p))
		return errors.New("panic in resolver") // presented as INTERNAL
	}
}

package graph

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"
)

// principal is who makes a request. Only the admin token exists so far;
// the access-control issue adds namespace tokens.
type principal struct {
	admin bool
}

type principalKey struct{}

func principalFrom(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

func isAdmin(ctx context.Context) bool { return principalFrom(ctx).admin }

// requireAdmin guards everything anonymous callers may not do.
func requireAdmin(ctx context.Context) error {
	if !isAdmin(ctx) {
		return newError(CodeUnauthenticated, "authentication required: send Authorization: Bearer <admin token>")
	}
	return nil
}

// authenticate reads the Authorization header. No header: anonymous. A
// bearer token equal to the admin token: admin. Anything else is refused
// (false), rather than silently downgraded to anonymous.
func authenticate(r *http.Request, adminToken string) (principal, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return principal{}, true
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return principal{}, false
	}
	token = strings.TrimSpace(token)
	if adminToken == "" || subtle.ConstantTimeCompare([]byte(token), []byte(adminToken)) != 1 {
		return principal{}, false
	}
	return principal{admin: true}, true
}

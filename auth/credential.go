package auth

import (
	"encoding/base64"
	"net/http"
	"strings"
)

// Credential is what a request presented in its Authorization header.
type Credential struct {
	// Scheme is "basic" or "bearer".
	Scheme string
	// Username of HTTP Basic; ignored (docker, Maven and npm insist on
	// sending one). Never log it either: people paste tokens there.
	Username string
	// Secret is the token: the Bearer value or the Basic password. Never
	// log it.
	Secret string
}

// maxAuthorizationLength bounds the header we parse (a token is 75
// characters; an OCI bearer token a few hundred).
const maxAuthorizationLength = 8 << 10

// CredentialFromRequest extracts the credential of a request:
//
//   - no Authorization header: (nil, nil), the request is anonymous;
//   - "Bearer <token>": the token (npm's _authToken arrives this way, and
//     so do OCI bearer tokens issued by TokenHandler);
//   - "Basic base64(<user>:<token>)": the password is the token, the user
//     name is ignored. The token as user name with an empty password is
//     refused, so there is exactly one place a token goes;
//
// anything else (another scheme, bad base64, no colon, empty token, white
// space inside the token, several Authorization headers, over 8 KiB) is an
// ErrUnauthenticated: a presented but unusable credential never silently
// degrades to anonymous.
func CredentialFromRequest(r *http.Request) (*Credential, error) {
	values := r.Header.Values("Authorization")
	switch {
	case len(values) == 0:
		return nil, nil
	case len(values) > 1:
		return nil, failure(reasonMalformed, "malformed Authorization header: send it once")
	}
	return ParseAuthorization(values[0])
}

// ParseAuthorization parses one Authorization header value (see
// CredentialFromRequest).
func ParseAuthorization(h string) (*Credential, error) {
	if len(h) > maxAuthorizationLength {
		return nil, failure(reasonMalformed, "malformed Authorization header: too long")
	}
	h = strings.TrimSpace(h)
	if h == "" {
		return nil, failure(reasonMalformed, "malformed Authorization header: empty")
	}
	scheme, rest, _ := strings.Cut(h, " ")
	rest = strings.TrimSpace(rest)
	switch strings.ToLower(scheme) {
	case "bearer":
		if rest == "" {
			return nil, failure(reasonMalformed, "malformed Authorization header: Bearer without a token")
		}
		if strings.ContainsAny(rest, " \t\r\n") {
			return nil, failure(reasonMalformed, "malformed Authorization header: the Bearer token contains white space")
		}
		return &Credential{Scheme: "bearer", Secret: rest}, nil
	case "basic":
		if rest == "" {
			return nil, failure(reasonMalformed, "malformed Authorization header: Basic without credentials")
		}
		raw, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			// A few clients leave the padding out.
			if raw, err = base64.RawStdEncoding.DecodeString(rest); err != nil {
				return nil, failure(reasonMalformed, "malformed Authorization header: Basic credentials are not valid base64")
			}
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return nil, failure(reasonMalformed, "malformed Authorization header: Basic credentials need user:password")
		}
		if pass == "" {
			return nil, failure(reasonMalformed, "the password must be the access token (any user name); an empty password is not accepted")
		}
		return &Credential{Scheme: "basic", Username: user, Secret: pass}, nil
	}
	return nil, failure(reasonMalformed, "unsupported Authorization scheme: use Basic (the token as password) or Bearer <token>")
}

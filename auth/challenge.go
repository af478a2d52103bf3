package auth

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// Challenges: the WWW-Authenticate value of a 401, per surface.
const (
	// BasicChallenge is the OCI (Basic mode) and Maven challenge: docker,
	// podman, crane, oras, regctl, skopeo and Maven's wagon all answer it
	// with the stored credentials (user name anything, password the token).
	BasicChallenge = `Basic realm="` + Realm + `"`
	// NpmChallenge goes with npm's 401s. npm reads only "otp" and
	// "ipaddress" from it; the message in the JSON body is what the user
	// sees.
	NpmChallenge = `Bearer realm="` + Realm + `"`
	// GraphQLChallenge goes with the 401 of /graphql.
	GraphQLChallenge = `Bearer realm="` + Realm + `"`
)

// OCIScope is the scope of a challenge or token request for an OCI
// repository name: "repository:<name>:pull,push".
func OCIScope(name string, actions ...Action) string {
	var set actionSet
	for _, a := range actions {
		set |= 1 << a
	}
	return "repository:" + name + ":" + strings.Join(ociActionNames(set), ",")
}

// OCIBearerChallenge is the Bearer challenge of the OCI token flow:
// Bearer realm="<realm>",service="<service>"[,scope="<scope> <scope>"].
func OCIBearerChallenge(realm, service string, scopes ...string) string {
	var b strings.Builder
	b.WriteString(`Bearer realm="`)
	b.WriteString(quoteEscape(realm))
	b.WriteString(`",service="`)
	b.WriteString(quoteEscape(service))
	b.WriteByte('"')
	if len(scopes) > 0 {
		b.WriteString(`,scope="`)
		b.WriteString(quoteEscape(strings.Join(scopes, " ")))
		b.WriteByte('"')
	}
	return b.String()
}

func quoteEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

// OCIChallenge is the WWW-Authenticate value of an OCI 401 for the given
// scope (OCIScope; "" for /v2/): the Bearer token flow when bearer is
// true, with the realm tokenURL (absolute; "" derives
// <scheme>://<host>/v2/token from the request), else BasicChallenge.
func (a *Authenticator) OCIChallenge(r *http.Request, bearer bool, tokenURL, scope string) string {
	if !bearer {
		return BasicChallenge
	}
	if tokenURL == "" {
		scheme := "http"
		if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
			scheme = "https"
		}
		tokenURL = scheme + "://" + r.Host + "/v2/token"
	}
	if scope == "" {
		return OCIBearerChallenge(tokenURL, a.opts.Service)
	}
	return OCIBearerChallenge(tokenURL, a.opts.Service, scope)
}

// InsufficientScope reports whether err is the 401 of an OCI bearer token
// that was not issued for the request (the challenge should then carry
// error="insufficient_scope" and the scope needed).
func InsufficientScope(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.InsufficientScope
}

// NpmErrorBody is the JSON body of an npm error: {"error": "<message>"},
// which the npm CLI prints.
func NpmErrorBody(err error) []byte {
	b, _ := json.Marshal(map[string]string{"error": err.Error()})
	return b
}

package maven

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
)

// challenge is the WWW-Authenticate value of every 401. Maven (wagon over
// Apache HttpClient) sends credentials on GET only after a 401 that
// carries a Basic challenge; on PUT it sends them pre-emptively.
const challenge = `Basic realm="artifact-registry"`

// credential is what the Authorization header presented.
type credential int

const (
	credNone    credential = iota // no Authorization header
	credInvalid                   // presented but not valid
	credAdmin                     // the admin token
)

// authenticate checks the Authorization header against the admin token:
// HTTP Basic with the token as password (any username: settings.xml
// <server><username>…</username><password>TOKEN</password>), or Bearer
// <token> (settings.xml httpHeaders). Until the access-control issue lands
// this is the only credential.
func (h *handler) authenticate(r *http.Request) credential {
	a := r.Header.Get("Authorization")
	if a == "" {
		return credNone
	}
	scheme, rest, _ := strings.Cut(a, " ")
	rest = strings.TrimSpace(rest)
	var secret string
	switch strings.ToLower(scheme) {
	case "basic":
		raw, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return credInvalid
		}
		_, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return credInvalid
		}
		secret = pass
	case "bearer":
		secret = rest
	default:
		return credInvalid
	}
	if h.tokenHash == nil || secret == "" {
		return credInvalid
	}
	sum := sha256.Sum256([]byte(secret))
	if subtle.ConstantTimeCompare(sum[:], h.tokenHash) == 1 {
		return credAdmin
	}
	return credInvalid
}

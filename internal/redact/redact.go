// Package redact removes secrets from what the server logs: access tokens
// (arp_…), bearer JWTs, the configured admin token, credentials in URLs
// and in key=value text, and the token segments of npm's token routes
// (npm logout sends DELETE /-/user/token/<token>). Every log line that
// carries a request path, a query or an error text goes through it: the
// request log and the protocols' error logs call Path or URL, and the
// process logger's Handler passes every message and string attribute
// through Text (Path for path-like attributes) as a last line of defence.
package redact

import (
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// minSecret is the shortest literal secret Secret registers: masking
// shorter strings would blank ordinary words.
const minSecret = 8

var (
	mu      sync.RWMutex
	secrets []string
)

// Secret registers a literal secret (the admin token) to mask wherever it
// appears, as it is and URL-escaped. Secrets shorter than 8 characters
// are ignored.
func Secret(s string) {
	if len(s) < minSecret {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	for _, v := range []string{s, url.PathEscape(s), url.QueryEscape(s)} {
		if !contains(secrets, v) {
			secrets = append(secrets, v)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

var (
	// accessToken is an access-token secret (auth.SecretPrefix and its
	// base62 body), also inside a longer word.
	accessToken = regexp.MustCompile(`arp_[0-9A-Za-z]+`)
	// jwt is a compact JWS (the bearer tokens of /v2/token).
	jwt = regexp.MustCompile(`eyJ[0-9A-Za-z_-]*\.[0-9A-Za-z_-]+\.[0-9A-Za-z_-]*`)
	// keyValue is a credential given as key=value (.npmrc, queries, the
	// signature of a signed object-store URL) or as a JSON member in text.
	keyValue = regexp.MustCompile(`(?i)((?:_auth|_authToken|authToken|auth_token|access_token|token|password|passwd|secret|client_secret|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential)(?:\s*=\s*|"\s*:\s*"))([^\s&;,"'/]+)`)
	// authHeader is an Authorization header value quoted in text: a
	// Bearer credential (16 characters at least, not a word), or any
	// scheme after "Authorization:".
	authHeader = regexp.MustCompile(`(?i)(authorization["']?\s*[:=]\s*["']?[a-z]+|\bbearer)\s+[0-9A-Za-z._~+/-]{16,}=*`)
	// userinfo is user:password@ in a URL.
	userinfo = regexp.MustCompile(`(://[^/\s:@]*:)[^/\s@]+@`)
)

// Text masks the secrets found in free text: registered literals,
// access tokens, JWTs, key=value credentials and URL passwords.
func Text(s string) string {
	mu.RLock()
	for _, v := range secrets {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Mask)
		}
	}
	mu.RUnlock()
	if strings.Contains(s, "arp_") {
		s = accessToken.ReplaceAllString(s, Mask)
	}
	if strings.Contains(s, "eyJ") {
		s = jwt.ReplaceAllString(s, Mask)
	}
	if mayMatch(s, authHeaderWords) {
		s = authHeader.ReplaceAllString(s, "${1} "+Mask)
	}
	if strings.ContainsAny(s, "=:") {
		if mayMatch(s, keyValueWords) {
			s = keyValue.ReplaceAllString(s, "${1}"+Mask)
		}
		if strings.Contains(s, "@") {
			s = userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
		}
	}
	return s
}

// Words one of which every match of a case-insensitive pattern holds:
// authHeader's (authorization, bearer) and keyValue's (every key it
// names holds one of these). Without them the pattern is not run: a
// digest (sha256:<hex>) in a request path made keyValue scan for
// 15 µs.
var (
	authHeaderWords = []string{"authorization", "bearer"}
	keyValueWords   = []string{"auth", "token", "pass", "secret", "x-amz-", "x-goog-"}
)

// mayMatch reports whether s, lowercased, holds one of words. Text with
// a byte outside ASCII always may: Go's case-insensitive patterns fold
// letters to non-ASCII ones too (k to the Kelvin sign, s to long s),
// which lowercasing does not.
func mayMatch(s string, words []string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return true
		}
	}
	lower := strings.ToLower(s)
	for _, w := range words {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// Path masks a request path: Text, and every segment after a segment
// named "token" (npm: /-/user/token/<token>,
// /-/npm/v1/tokens/token/<token-or-id>).
func Path(p string) string {
	p = Text(p)
	if !strings.Contains(strings.ToLower(p), "token/") {
		return p
	}
	segs := strings.Split(p, "/")
	for i := 1; i < len(segs); i++ {
		if strings.EqualFold(segs[i-1], "token") && segs[i] != "" {
			segs[i] = Mask
		}
	}
	return strings.Join(segs, "/")
}

// sensitiveParams are query parameters whose values are credentials.
var sensitiveParams = []string{"token", "_authtoken", "authtoken", "auth_token", "access_token", "refresh_token",
	"password", "passwd", "secret", "client_secret", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token", "x-goog-signature", "x-goog-credential", "sig", "key", "code"}

// Query masks the values of credential parameters of a raw query, and
// Text in the rest.
func Query(raw string) string {
	if raw == "" {
		return ""
	}
	parts := strings.Split(raw, "&")
	for i, part := range parts {
		k, _, ok := strings.Cut(part, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if ok && contains(sensitiveParams, strings.ToLower(name)) {
			parts[i] = k + "=" + Mask
			continue
		}
		parts[i] = Text(part)
	}
	return strings.Join(parts, "&")
}

// URL is the redacted path and query of u, as the request log shows it
// (no scheme, host or user information).
func URL(u *url.URL) string {
	p := Path(u.EscapedPath())
	if u.RawQuery == "" {
		return p
	}
	return p + "?" + Query(u.RawQuery)
}

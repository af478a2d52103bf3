package upstream

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"
)

// Kind classifies why an upstream request did not produce content. It
// drives what a remote repository does next: serve from cache, answer
// 404, or answer 502/503/504.
type Kind int

const (
	// KindNotFound: the upstream answered 404 or 410, or a negative-cache
	// entry for the same key is still fresh (Error.Cached).
	KindNotFound Kind = iota + 1
	// KindUnauthorized: the upstream refused the credentials (401/403
	// after the challenge was answered, or the token endpoint refused
	// them), or its realm may not be used (see Config.TrustedRealms).
	KindUnauthorized
	// KindRateLimited: the upstream answered 429, or its Retry-After has
	// not passed yet and the request failed fast (Error.RetryAt).
	KindRateLimited
	// KindOffline: the circuit breaker is open and the request failed
	// fast without contacting the upstream (Error.RetryAt).
	KindOffline
	// KindUnreachable: no HTTP answer (connection refused or reset, DNS
	// failure, TLS failure).
	KindUnreachable
	// KindTimeout: connect, response header or body stall timeout.
	KindTimeout
	// KindBadGateway: the upstream answered 5xx (Error.Status).
	KindBadGateway
	// KindRejected: any other 4xx (the request made no sense to the
	// upstream).
	KindRejected
	// KindInvalid: the upstream's answer is unusable: a body that does
	// not match its expected digest or length, one over the fill size
	// limit, an unexpected status for a fill, an unreadable token answer.
	KindInvalid
)

var kindNames = map[Kind]string{
	KindNotFound: "not_found", KindUnauthorized: "unauthorized", KindRateLimited: "rate_limited",
	KindOffline: "offline", KindUnreachable: "unreachable", KindTimeout: "timeout",
	KindBadGateway: "bad_gateway", KindRejected: "rejected", KindInvalid: "invalid",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Error is every failure the package returns for an upstream that did
// not deliver, except the caller's own context ending (then the context's
// error is returned as is).
//
// Error() never holds an upstream URL, a query string or a credential, so
// it may be logged; ClientMessage is shorter still and is what a protocol
// may put in an error body.
type Error struct {
	Kind Kind
	// Status is the upstream's HTTP status, 0 when there was none.
	Status int
	// RetryAt is when a rate-limited or offline upstream is tried again.
	RetryAt time.Time
	// Cached: a KindNotFound answered from the negative cache.
	Cached bool

	msg   string
	cause error
}

func (e *Error) Error() string {
	if e.cause == nil {
		return "upstream: " + e.msg
	}
	return "upstream: " + e.msg + ": " + e.cause.Error()
}

// Unwrap returns the cause (URLs already removed).
func (e *Error) Unwrap() error { return e.cause }

// ClientMessage is a short text for an error body: no host, no URL, no
// credential.
func (e *Error) ClientMessage() string { return "upstream " + e.msg }

// ClientStatus is the HTTP status a remote repository answers when it has
// nothing cached to serve instead: 404 for KindNotFound, 504 for
// timeouts, 503 while the upstream is offline or rate-limited, 502 for
// everything else the upstream got wrong. Never 500: the registry itself
// did not fail.
func (e *Error) ClientStatus() int {
	switch e.Kind {
	case KindNotFound:
		return http.StatusNotFound
	case KindTimeout:
		return http.StatusGatewayTimeout
	case KindOffline, KindRateLimited:
		return http.StatusServiceUnavailable
	default:
		return http.StatusBadGateway
	}
}

// Temporary reports whether the failure says nothing about the content:
// the upstream could not be asked (offline, rate-limited, unreachable,
// timing out, failing with 5xx, refusing our credentials). A remote
// repository serves what it has cached on these.
func (e *Error) Temporary() bool {
	switch e.Kind {
	case KindNotFound, KindRejected, KindInvalid:
		return false
	}
	return true
}

// IsKind reports whether err is an *Error of kind k.
func IsKind(err error, k Kind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == k
}

func newError(k Kind, msg string, cause error) *Error {
	return &Error{Kind: k, msg: msg, cause: stripURL(cause)}
}

// stripURL removes the *url.Error wrapper, whose text holds the request
// URL (and, for a token request, the scope and possibly an account).
func stripURL(err error) error {
	for {
		var ue *url.Error
		if !errors.As(err, &ue) {
			return err
		}
		err = ue.Err
	}
}

// classify turns a transport error into an *Error. A *Error coming out of
// the transport (the token exchange) is kept.
func classify(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var ne net.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, errStalled),
		errors.As(err, &ne) && ne.Timeout():
		return newError(KindTimeout, "timed out", err)
	}
	return newError(KindUnreachable, "unreachable", err)
}

// errStalled is the cause of a body read that made no progress within
// Config.StallTimeout.
var errStalled = errors.New("no bytes received within the stall timeout")

func statusError(status int) *Error {
	switch {
	case status == http.StatusNotFound || status == http.StatusGone:
		return &Error{Kind: KindNotFound, Status: status, msg: "has no such content"}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return &Error{Kind: KindUnauthorized, Status: status, msg: fmt.Sprintf("refused the credentials (%d)", status)}
	case status == http.StatusTooManyRequests:
		return &Error{Kind: KindRateLimited, Status: status, msg: "rate limit reached (429)"}
	case status >= 500:
		return &Error{Kind: KindBadGateway, Status: status, msg: fmt.Sprintf("failed (%d)", status)}
	default:
		return &Error{Kind: KindRejected, Status: status, msg: fmt.Sprintf("rejected the request (%d)", status)}
	}
}

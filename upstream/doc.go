// Package upstream is the layer every remote repository (OCI, npm, Maven)
// uses to talk to its upstream registry: one Client per remote, holding
// the HTTP transport, the upstream's auth, a circuit breaker, the
// rate-limit gate, a negative cache of 404s and the single-flight fills
// that stream upstream content to clients while it is being cached.
//
// # Contract
//
// Construction. New never contacts the upstream. The auth scheme is
// learned from the first 401 (WWW-Authenticate: Bearer or Basic), so a
// remote whose upstream is down does not keep the server from starting.
// Build one Client per remote and keep it while the remote's settings are
// unchanged; tokens, breaker state and fills in flight live in it. Close
// it when the remote goes away or the process stops.
//
// Requests. Client.Do sends one request and returns the response only for
// 2xx and 3xx (304 Not Modified); every other outcome is an *Error whose
// Kind tells the caller what to do:
//
//   - KindNotFound (404/410, or a negative-cache hit: Error.Cached):
//     the content does not exist upstream; answer 404 (or apply the
//     remote's policy for a cached copy).
//   - KindOffline, KindRateLimited, KindUnreachable, KindTimeout,
//     KindBadGateway, KindUnauthorized (Error.Temporary() is true): the
//     upstream could not be asked; serve what is cached, otherwise
//     answer Error.ClientStatus() (502, 503 or 504, never 500).
//   - KindRejected, KindInvalid: the upstream answered something
//     unusable; do not cache, answer ClientStatus().
//
// Error() and ClientMessage() never contain an upstream URL, a query
// string or a credential; ClientMessage is meant for error bodies. When
// the caller's context ends first, Do returns the context's error itself
// (and the breaker does not count it).
//
// Credentials. Credentials are plaintext handed in by the caller, which
// owns their encryption at rest. They are sent:
//
//   - as Basic, only to the upstream's own origin (scheme, host and
//     port of Config.URL), and only after that origin asked for Basic or
//     for Bearer with a named realm rather than a token service URL (npm
//     registries answer `Bearer realm="<name>"` and take the client's
//     credentials directly);
//   - to a Bearer realm only if the realm is on the upstream's host:port,
//     on a host listed in Config.TrustedRealms, or on a host of the same
//     registrable domain (eTLD+1 by the public suffix list; IP literals
//     and single-label names only ever match exactly), and never over
//     plain http when the upstream is https. Other realms are asked
//     anonymously; a realm on a loopback or private address that is not
//     trusted is not contacted at all (an upstream must not make us
//     probe our own network).
//
// Authorization is added by the transport per hop, for the upstream's
// origin only: a redirect to a CDN, a bucket or any other origin
// (including a subdomain of the upstream) carries no Authorization and no
// Cookie, and neither does a request for an absolute URL elsewhere (an npm
// tarball host).
//
// Tokens. Bearer tokens are cached per (realm, service, the scopes the
// caller named in Request.Scopes) until shortly before expires_in (60 s
// when omitted) and fetched again then, without a 401 first; concurrent
// requests needing the same token share one token request. A token the
// upstream rejects is replaced once per request. OCI callers name the
// repository scope ("repository:library/alpine:pull") so that the first
// request of a known challenge carries its token.
//
// Timeouts. Connect, TLS handshake, response header and idle-connection
// timeouts bound the transport; a body read that receives nothing for
// Config.StallTimeout fails with KindTimeout, for Do's bodies and fills
// alike.
//
// Circuit breaker. Consecutive failures (no answer, timeouts, stalled or
// broken bodies, 5xx; not 404, other 4xx, 401/403 or 429) open the
// breaker at Config.FailureThreshold: for Config.OfflinePeriod every
// request fails at once with KindOffline (Error.RetryAt says until when),
// so the caller serves from its cache without waiting. Then one request
// is let through as a probe (the others still fail fast); an answer
// closes the breaker, a failure opens it for another period. State is per
// process: each instance learns the upstream's state on its own.
//
// Rate limits. A 429 makes every request fail fast with KindRateLimited
// until its Retry-After (seconds or a date, capped by MaxRetryAfter;
// RateLimitWait when absent). The ratelimit-limit and ratelimit-remaining
// headers of every answer are exported as gauges.
//
// Health. The client keeps Health (status, time, last error, retry time)
// and hands it to Config.HealthRecorder, which a remote implements over
// its table's last_health_status and last_health_checked_at: on every
// status change and otherwise at most once per HealthInterval, from a
// background goroutine, in order, never on a request's path. Healthy
// after an answer; unhealthy when the breaker opens, a 429 arrives or the
// credentials are refused (the breaker stays closed then: the upstream is
// up, only our configuration is wrong).
//
// Negative cache. 404 and 410 answers are remembered per key (the
// request's path and query, or Request.NegativeKey) for Config.NegativeTTL
// and answered as KindNotFound with Cached set, without an upstream
// request. 5xx, timeouts and connection errors are never remembered.
// ForgetNotFound drops a key (found elsewhere, invalidated by an admin).
//
// Fills. Client.Fill fetches content once for every concurrent caller of
// the same FillRequest.Key (within this client, so per remote): the first
// caller starts the upstream GET, the others join it, including callers
// that arrive while the body is flowing. The body is spooled (in memory
// up to Config.MemorySpool bytes of known length, otherwise in an
// unlinked temporary file under Config.SpoolDir) and every reader follows
// the spool from byte 0 at its own pace, so a slow client slows neither
// the fetch nor the others. Fill returns once the upstream's headers are
// in (FillReader.Size and Header are known) or with the *Error that
// prevented them.
//
// The body is hashed while it arrives with every algorithm of
// Expect.Digests (sha256 for OCI; sha512 or sha1 for npm and Maven) and
// its length checked against Expect.Size and Content-Length. Readers get
// io.EOF only after all of that matched; otherwise their Read returns a
// KindInvalid *Error (or the upstream's failure) instead, so a client
// never sees a wrong body end cleanly.
//
// Caching goes through the caller's FillRequest.Stage, which receives
// the body as one more follower of the spool and writes it to the
// caller's storage (for OCI: store.StageStream or StageBlob into an
// upload session, never the whole blob in memory). Staged.Commit is
// called only when the whole body went through the stage's reader and
// its length and every digest matched; otherwise, or after a failed
// Commit, Staged.Discard. Commit receives the FillResult (size, verified
// digests, upstream headers), where the OCI remote runs
// store.CommitStaged inside its own transaction and attaches the blob to
// its rows.
//
// A fill does not belong to any client request: it runs on a context of
// its own, bounded by Config.MaxFillTime and Config.MaxFillSize, and goes
// on when its callers disconnect, so the cache still ends complete. A
// failed fill is never joined by later callers (they start a new one); a
// finished one is joined, from its spool, until its last reader closes.
// Client.Close lets fills in flight finish until its context ends, then
// cancels them.
//
// A conditional fill (If-None-Match or If-Modified-Since in
// Request.Header) that the upstream answers 304 fails with an *Error of
// Status 304: the caller's cached copy is current.
//
// Metrics. Metrics holds the package's Prometheus series, labelled by
// Config.Name: requests by outcome, header latency, breaker state,
// rate-limit gauges, token requests, fills by outcome, fill joins, bytes
// and negative-cache hits. One set per process; register Collectors()
// once and pass the set to every Client.
package upstream

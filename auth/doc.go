// Package auth is the one authentication and authorization layer of every
// surface: OCI, npm, Maven and GraphQL. It lives at the top level, next to
// store, protocol and graph, because it is a domain layer those four share
// (the access policy of the product), not plumbing like internal/config or
// internal/testdb.
//
// # Credentials
//
// A request carries at most one credential, in its Authorization header
// (CredentialFromRequest): "Bearer <token>" (npm's _authToken, curl, OCI
// bearer tokens) or HTTP Basic with the token as the password and any user
// name (docker login, crane/oras --username/--password, Maven
// settings.xml). Three kinds of token exist:
//
//   - the configured admin token: the instance super-user;
//   - namespace access tokens: "arp_" + namespace id + 256 random bits +
//     checksum (secret.go), stored only as SHA-256, with scopes READ,
//     WRITE, DELETE, ADMIN, an optional repository list and an optional
//     expiry;
//   - OCI bearer tokens issued by TokenHandler (bearer.go), signed with a
//     random key kept in the database and shared by every replica
//     (signing.go), never with one derived from a configured secret.
//
// A presented credential that is malformed, unknown, revoked or expired is
// ErrUnauthenticated even where anonymous access would pass: it never
// silently degrades to anonymous. Such failures are limited per client
// address (ratelimit.go): past Options.FailureLimit the address gets
// ErrRateLimited before its credential is checked.
//
// # Decision
//
// Authorize(ctx, principal, action, target) is the decision; its doc
// comment lists the rules. The matrix (auth_test.go asserts every cell):
//
//	                      PUBLIC            INTERNAL           PRIVATE
//	read   anonymous      allow             401                401
//	       token, same ns allow             allow              allow
//	       token, other   allow             allow (unrestr.)   403
//	write  anonymous      401               401                401
//	       token, same ns needs WRITE (or ADMIN), else 403
//	       token, other   403               403                403
//	delete needs DELETE (or ADMIN) of the same namespace
//	admin  needs ADMIN of the same namespace (namespace target: unrestricted)
//	admin token: everything (subject to service conditions, see below)
//
// A token restricted to a repository list gets 403 on every other
// repository (PUBLIC reads excepted) and on namespace-level writes and
// administration. Expired and revoked tokens are 401.
//
// # Service conditions
//
// The serving predicate (docs/schema.md "Status columns and serving"),
// enforced here for every surface: reads need
// deleted_at, purged_at, blocked_at and disabled_at NULL; writes, deletes
// and administration also need suspended_at NULL, so a suspended namespace
// is read-only. Tokens of a blocked or disabled namespace get nothing
// anywhere; tokens of a deleted or purged namespace are invalid (401). The
// super-user's administration (ActionAdmin, ActionAdminRead) is exempt,
// so conditions can be inspected and lifted.
//
// # Status mapping
//
//	error                                   OCI                    npm                 Maven   GraphQL code
//	ErrUnauthenticated                      401 UNAUTHORIZED       401 {"error"}       401     UNAUTHENTICATED
//	                                        + WWW-Authenticate     + NpmChallenge      + Basic
//	ErrForbidden                            403 DENIED             403 {"error"}       403     FORBIDDEN
//	NamespaceUnavailable deleted/purged     404 NAME_UNKNOWN       404 {"error"}       404     NOT_FOUND
//	NamespaceUnavailable blocked/disabled/  403 DENIED             403 {"error"}       403     NAMESPACE_UNAVAILABLE
//	  suspended                                                                                 (+ extensions.reason)
//	ErrRateLimited                          429 TOOMANYREQUESTS    429 {"error"}       429     RATE_LIMITED
//	                                        + Retry-After          + Retry-After       + Retry-After (HTTP 429)
//
// The message of every decision error is written for the client (it says
// which scope is missing, or that the namespace is suspended and
// read-only) and never contains a secret. HTTPStatus and GraphQLCode
// implement the table.
//
// # Caching and revocation
//
// Token lookups are cached per process for Options.CacheTTL (5 s),
// positive and negative, keyed by the secret's SHA-256, so the request
// path is one map lookup and one SHA-256 most of the time. Expiry is
// checked on every request against the clock. A revocation through
// RevokeToken takes effect at once on the replica that made it and within
// CacheTTL on the others; so does a change of the token's namespace
// conditions. OCI bearer tokens re-validate their access token through the
// same cache, so revocation bounds them too.
//
// # last_used_at
//
// Each accepted token use records the time in memory (max per token);
// Run flushes the buffer every FlushInterval (30 s) with one
// store.TouchAccessTokens call, a single batched statement whatever the
// request rate. It merges by max, so several replicas can flush in any
// order.
package auth

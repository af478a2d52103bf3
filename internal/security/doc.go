// Package security holds no code: its tests keep the registry's security
// properties proven against a real server (internal/testserver: every
// surface mounted as serve mounts it, real PostgreSQL, a file bucket).
//
//   - The authorization rules of every HTTP route and every GraphQL root
//     field are tables generated against the router (mux Walk) and the
//     schema: a route or field without a rule fails the build's tests,
//     naming it. Each rule is then exercised with two namespaces, tokens of
//     every scope, a token limited to some repositories and repositories of
//     every visibility: cross-namespace and cross-repository access must be
//     refused in the protocol's own format and allowed where the rule says.
//   - Bad input already handled (path traversal, malformed digests and
//     ranges, oversize manifests, XXE) is replayed against the server.
//   - With the database down every surface answers 503 with Retry-After.
package security

// Package accesscontrol holds no code: its tests drive the OCI, npm and
// Maven surfaces together over one auth.Authenticator and real
// PostgreSQL, asserting the access matrix of issue 7 (visibility × token ×
// operation × protocol), the service conditions, the hiding of unknown
// names and revocation under concurrent use.
package accesscontrol

// Package accesscontrol holds no code: its tests drive the OCI, npm and
// Maven surfaces together over one auth.Authenticator and real PostgreSQL
// (the shared server of internal/testserver), asserting the access matrix
// (visibility × token × operation × protocol), the service conditions, the
// hiding of unknown names and revocation under concurrent use.
package accesscontrol

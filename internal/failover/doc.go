// Package failover holds the test that fails the registry's database over
// to a synchronous streaming standby while requests are served, with the
// real serve binary and real PostgreSQL clusters (see failover_test.go and
// docs/scaling.md). It has no code of its own.
package failover

// Package soak is a load generator for a running registry: workers send a
// weighted mix of OCI pushes and pulls, npm publishes and installs, Maven
// deploys and resolves and GraphQL listings over plain HTTP, while a fault
// schedule breaks parts of the deployment. Every write the registry
// acknowledged is logged and read back at the end; the report gives
// throughput, latency percentiles, errors by status inside and outside the
// fault windows, and the acknowledged writes that were lost.
//
// A request counts as "in window" when its lifetime overlaps a fault's
// window stretched by Config.Grace after the fault healed: requests already
// in flight when the fault starts may fail, and so may requests in the
// moments after healing while health checks and connection pools catch up.
// Anything else that fails is an error outside the windows.
package soak

package soak

import (
	"context"
	"time"
)

// Operation names, as the report prints them.
const (
	OpOCIPush        = "oci-push"
	OpOCIPushChunked = "oci-push-chunked"
	OpOCIPull        = "oci-pull"
	OpNpmPublish     = "npm-publish"
	OpNpmInstall     = "npm-install"
	OpMavenDeploy    = "maven-deploy"
	OpMavenResolve   = "maven-resolve"
	OpGraphQLList    = "graphql-list"
)

// DefaultMix weights reads above writes, as registries are used.
var DefaultMix = map[string]int{
	OpOCIPush: 8, OpOCIPushChunked: 4, OpOCIPull: 20,
	OpNpmPublish: 8, OpNpmInstall: 20,
	OpMavenDeploy: 8, OpMavenResolve: 20,
	OpGraphQLList: 8,
}

// Config is one soak run.
type Config struct {
	// BaseURL reaches the registry (a load balancer in front of several
	// instances, or one server); AdminToken is its super-user token, used
	// for setup only.
	BaseURL    string
	AdminToken string
	// Duration of the workload; the final read-back comes after it.
	Duration time.Duration
	// Workers send operations back to back (default 4).
	Workers int
	// Mix weighs the operations (default DefaultMix).
	Mix map[string]int
	// Grace stretches every fault window past its end (default 10s).
	Grace time.Duration
	// RequestTimeout bounds one HTTP request (default 30s).
	RequestTimeout time.Duration
	// VerifyTimeout bounds the final read-back while the registry is
	// still unavailable (default 2m).
	VerifyTimeout time.Duration
	// Faults run during the workload.
	Faults []Fault
	// Seed makes the workload reproducible (0: from the clock).
	Seed uint64
}

// Fault is one scheduled failure: Inject at At after the start, Hold, then
// Heal. Its window runs from just before Inject to just after Heal
// returns, so Heal should return once the deployment is whole again.
type Fault struct {
	Kind   string
	At     time.Duration
	Hold   time.Duration
	Inject func(context.Context) error
	Heal   func(context.Context) error
}

func (c *Config) defaults() {
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if len(c.Mix) == 0 {
		c.Mix = DefaultMix
	}
	if c.Grace <= 0 {
		c.Grace = 10 * time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.VerifyTimeout <= 0 {
		c.VerifyTimeout = 2 * time.Minute
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
}

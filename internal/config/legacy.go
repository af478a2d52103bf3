package config

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"
)

// Legacy configures the migration from an existing registry:2 (CNCF
// distribution): proxy mode in front of it, and the migration service
// that imports its repositories one by one. Empty LegacyURL: off.
type Legacy struct {
	// URL of the legacy registry's HTTP API (http://host:5000).
	URL string
	// Username and Password authenticate us to the legacy registry (HTTP
	// Basic, or the token flow its Bearer challenge asks for).
	Username string
	Password string
	// MappingFile holds the legacy path → (namespace, repository, image)
	// rules (legacy/mapping).
	MappingFile string
	// Include and Exclude decide where a repository that is not in the
	// inventory lives: matching an include and no exclude, it is created
	// here; otherwise in the legacy registry.
	Include []*regexp.Regexp
	Exclude []*regexp.Regexp
	// StorageURL is the legacy registry's storage (file:// or s3://) the
	// importer reads.
	StorageURL string
	// RetryAfter is sent with the 503 a write gets during the read-only
	// window of its repository.
	RetryAfter time.Duration
	// MaxConcurrency is the upper bound of the repositories imported at
	// once (the River queue's workers, fixed at start). The concurrency
	// itself, the cadence and the final-pass time limit are run-time
	// controls in the database (GraphQL setLegacyMigrationControls), not
	// flags: one source of truth.
	MaxConcurrency int
	// ServiceEnabled runs the migration service in this process.
	ServiceEnabled bool

	include, exclude string
}

// Enabled reports whether proxy mode is on.
func (l *Legacy) Enabled() bool { return l.URL != "" }

// Register declares the legacy flags on fs.
func (l *Legacy) Register(fs *flag.FlagSet) {
	envString(fs, &l.URL, "legacy-url", "ARTIFACT_REGISTRY_LEGACY_URL", "", "legacy registry:2 URL; set to serve in proxy mode in front of it")
	envString(fs, &l.Username, "legacy-username", "ARTIFACT_REGISTRY_LEGACY_USERNAME", "", "user name for the legacy registry")
	envString(fs, &l.Password, "legacy-password", "ARTIFACT_REGISTRY_LEGACY_PASSWORD", "", "password for the legacy registry")
	envString(fs, &l.MappingFile, "legacy-mapping", "ARTIFACT_REGISTRY_LEGACY_MAPPING", "", "file of legacy path to namespace/repository/image rules")
	envString(fs, &l.include, "legacy-include", "ARTIFACT_REGISTRY_LEGACY_INCLUDE", "", "comma-separated regular expressions: new repositories matching one are created here")
	envString(fs, &l.exclude, "legacy-exclude", "ARTIFACT_REGISTRY_LEGACY_EXCLUDE", "", "comma-separated regular expressions: new repositories matching one stay in the legacy registry")
	envString(fs, &l.StorageURL, "legacy-storage-url", "ARTIFACT_REGISTRY_LEGACY_STORAGE_URL", "", "legacy registry storage (file://, s3://) read by the importer")
	envDuration(fs, &l.RetryAfter, "legacy-retry-after", "ARTIFACT_REGISTRY_LEGACY_RETRY_AFTER", 30*time.Second, "Retry-After sent to writes during a repository's read-only window")
	envInt(fs, &l.MaxConcurrency, "legacy-max-concurrency", "ARTIFACT_REGISTRY_LEGACY_MAX_CONCURRENCY", 8, "upper bound of the repositories the migration service imports at once (the concurrency itself is set at run time through GraphQL)")
	envBool(fs, &l.ServiceEnabled, "legacy-migrate", "ARTIFACT_REGISTRY_LEGACY_MIGRATE", "run the migration service (needs --legacy-storage-url)")
}

// Finish parses the lists and validates.
func (l *Legacy) Finish() error {
	var err error
	if l.Include, err = regexpList("--legacy-include", l.include); err != nil {
		return err
	}
	if l.Exclude, err = regexpList("--legacy-exclude", l.exclude); err != nil {
		return err
	}
	if !l.Enabled() {
		if l.ServiceEnabled {
			return fmt.Errorf("--legacy-migrate needs --legacy-url")
		}
		return nil
	}
	u, err := url.Parse(l.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--legacy-url must be an http(s) URL, not %q", l.URL)
	}
	l.URL = strings.TrimRight(l.URL, "/")
	if l.MappingFile == "" {
		return fmt.Errorf("--legacy-url needs --legacy-mapping")
	}
	if _, err := os.Stat(l.MappingFile); err != nil {
		return fmt.Errorf("--legacy-mapping: %w", err)
	}
	if (l.Username == "") != (l.Password == "") {
		return fmt.Errorf("--legacy-username and --legacy-password go together")
	}
	if l.RetryAfter < time.Second {
		return fmt.Errorf("--legacy-retry-after must be at least 1s, not %s", l.RetryAfter)
	}
	if l.MaxConcurrency < 1 || l.MaxConcurrency > 64 {
		return fmt.Errorf("--legacy-max-concurrency must be between 1 and 64, not %d", l.MaxConcurrency)
	}
	if l.ServiceEnabled && l.StorageURL == "" {
		return fmt.Errorf("--legacy-migrate needs --legacy-storage-url")
	}
	return nil
}

// regexpList parses a comma-separated list of regular expressions; each
// is anchored, so "team/.*" does not match "other/team/x".
func regexpList(flagName, s string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		re, err := regexp.Compile("^(?:" + p + ")$")
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", flagName, p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// Local reports whether a repository that is not in the inventory is
// created here (true) or in the legacy registry.
func (l *Legacy) Local(path string) bool {
	if !matchAny(l.Include, path) {
		return false
	}
	return !matchAny(l.Exclude, path)
}

func matchAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

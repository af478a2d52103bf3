// Package config reads the server's settings from flags, each with an
// environment variable equivalent; a flag given on the command line wins.
package config

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/artifact-registry/artifact-registry/internal/redact"
)

// Config is everything serve and migrate need to start.
type Config struct {
	Listen          string
	DatabaseURL     string
	DataDir         string
	StorageURL      string
	AdminToken      string
	PublicURL       string
	LogFormat       string
	LogLevel        string
	NoMigrate       bool
	ShutdownTimeout time.Duration
	// BodyIdleTimeout cuts a request body that sends nothing, or a client
	// that reads no response bytes, for this long (httpserver).
	BodyIdleTimeout time.Duration
	// GCPhase is the GC rollout phase (docs/garbage-collection.md
	// "Operational controls"): 1 record candidates only, 2
	// recheck and discard but delete nothing, 3 delete.
	GCPhase       int
	GCReviewDelay time.Duration
	// GCExpiryInterval is how often gc:expiry-sweep purges trash rows past
	// their namespace's retention.
	GCExpiryInterval time.Duration
	// Legacy is proxy mode and the migration from a registry:2.
	Legacy Legacy
	// GCCleanupWorkers is how many gc:cleanup jobs run at once; each holds
	// a pool connection for its transaction.
	GCCleanupWorkers int
	// GCCleanupRate is how many GC candidates per second this instance's
	// cleanups take on at most (0: no limit).
	GCCleanupRate int
	// DBMaxConns is the database pool size; 0 derives it from the job
	// workers (PoolMaxConns).
	DBMaxConns int
	// MaxUploadSessionsPerRepository caps the open upload sessions of one
	// repository (0: no cap).
	MaxUploadSessionsPerRepository int
	// AuthFailureLimit is how many failed authentications a client
	// address may make per minute before it gets 429; 0 turns it off.
	AuthFailureLimit int
	// TrustedProxiesList is the --trusted-proxies value; Finish parses it
	// into TrustedProxies.
	TrustedProxiesList string
	TrustedProxies     []netip.Prefix
	// NpmMaxPublishBytes caps an npm publish body, the tarball in base64
	// included.
	NpmMaxPublishBytes int
	// LifecycleInterval is how often lifecycle:apply applies the enabled
	// lifecycle policies.
	LifecycleInterval time.Duration
	// RootKeyURL is the gocloud.dev/secrets keeper URL of the root key
	// that wraps the namespace keys of upstream credentials
	// (internal/rootkey). Empty: generated under DataDir for the embedded
	// default, none with DatabaseURL.
	RootKeyURL string
	// PreviousRootKeyURLsList is the --previous-root-key-urls value;
	// Finish splits it into PreviousRootKeyURLs.
	PreviousRootKeyURLsList string
	PreviousRootKeyURLs     []string
	// RemoteSpoolDir holds the spool files of pull-through cache fills
	// (each unlinked at creation); empty: the system temporary directory.
	RemoteSpoolDir string
	// StorageRedirect answers blob downloads with signed URLs of the
	// object store (S3 or GCS) instead of streaming them (blobredirect).
	StorageRedirect bool
}

// MinAdminTokenLength is the shortest admin token accepted: the admin
// token is a password that can be guessed online, so it must be long
// and random (32 characters of base64 are 192 bits).
const MinAdminTokenLength = 32

// DefaultNpmMaxPublishBytes is the default of --npm-max-publish-bytes
// (npm.DefaultMaxPublishSize).
const DefaultNpmMaxPublishBytes = 256 << 20

// Pool sizing. Every running River job holds a pool connection for its
// transaction, so a pool no larger than the job workers lets a busy
// garbage collector starve the request path (pgxpool's default is
// max(4, NumCPU)). The derived size leaves ForegroundConns for requests.
const (
	// DefaultQueueWorkers is MaxWorkers of River's default queue (npm
	// packument rebuilds).
	DefaultQueueWorkers = 10
	// GCMaintenanceWorkers is MaxWorkers of the GC maintenance queue
	// (sweep, reconcile, staging sweep: gc.GC.Queues).
	GCMaintenanceWorkers = 2
	// riverConns: River's leader election and notifier.
	riverConns = 2
	// counterFoldWorkers is MaxWorkers of the counter fold queue
	// (counters.Folder.Queues).
	counterFoldWorkers = 1
	// lifecycleWorkers is MaxWorkers of the lifecycle queue.
	lifecycleWorkers = 1
	// ForegroundConns is the headroom for HTTP requests in the derived size.
	ForegroundConns = 16
	// minForegroundConns is the least headroom an explicit size may leave.
	minForegroundConns = 4
)

// JobConns is how many connections the job workers can hold at once.
func (c *Config) JobConns() int {
	n := c.GCCleanupWorkers + GCMaintenanceWorkers + DefaultQueueWorkers + counterFoldWorkers + lifecycleWorkers + riverConns
	if c.Legacy.Enabled() {
		n += c.Legacy.MaxConcurrency + 1 // legacy/service.Service.Queues
	}
	return n
}

// PoolMaxConns is the database pool size: DBMaxConns, or the job
// connections plus ForegroundConns.
func (c *Config) PoolMaxConns() int32 {
	if c.DBMaxConns > 0 {
		return int32(c.DBMaxConns)
	}
	return int32(c.JobConns() + ForegroundConns)
}

// envString declares a flag whose default comes from the environment.
func envString(fs *flag.FlagSet, p *string, name, env, def, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		def = v
	}
	fs.StringVar(p, name, def, fmt.Sprintf("%s (env %s)", usage, env))
}

func envBool(fs *flag.FlagSet, p *bool, name, env string, usage string) {
	def := false
	if v, ok := os.LookupEnv(env); ok {
		def = v == "1" || strings.EqualFold(v, "true")
	}
	fs.BoolVar(p, name, def, fmt.Sprintf("%s (env %s)", usage, env))
}

func envInt(fs *flag.FlagSet, p *int, name, env string, def int, usage string) {
	if v, err := strconv.Atoi(os.Getenv(env)); err == nil {
		def = v
	}
	fs.IntVar(p, name, def, fmt.Sprintf("%s (env %s)", usage, env))
}

func envDuration(fs *flag.FlagSet, p *time.Duration, name, env string, def time.Duration, usage string) {
	if v, err := time.ParseDuration(os.Getenv(env)); err == nil {
		def = v
	}
	fs.DurationVar(p, name, def, fmt.Sprintf("%s (env %s)", usage, env))
}

// Register declares the flags on fs; call Finish after fs.Parse.
func (c *Config) Register(fs *flag.FlagSet) {
	envString(fs, &c.Listen, "listen", "ARTIFACT_REGISTRY_LISTEN", "127.0.0.1:8080", "HTTP listen address")
	envString(fs, &c.DatabaseURL, "database-url", "DATABASE_URL", "", "PostgreSQL URL; empty starts a private cluster under <data-dir>/postgres")
	envString(fs, &c.DataDir, "data-dir", "ARTIFACT_REGISTRY_DATA_DIR", "./.data", "directory for the embedded database and file storage")
	envString(fs, &c.StorageURL, "storage-url", "ARTIFACT_REGISTRY_STORAGE_URL", "", "object storage URL (file://, mem://, s3://, gs://, azblob://); default file://<data-dir>/blobs")
	envString(fs, &c.AdminToken, "admin-token", "ARTIFACT_REGISTRY_ADMIN_TOKEN", "", "super-user token for the management API")
	envString(fs, &c.PublicURL, "public-url", "ARTIFACT_REGISTRY_PUBLIC_URL", "", "external base URL used in absolute links; default http://<listen>")
	envString(fs, &c.LogFormat, "log-format", "ARTIFACT_REGISTRY_LOG_FORMAT", "text", "log format: text or json")
	envString(fs, &c.LogLevel, "log-level", "ARTIFACT_REGISTRY_LOG_LEVEL", "info", "log level: debug, info, warn, error")
	envBool(fs, &c.NoMigrate, "no-migrate", "ARTIFACT_REGISTRY_NO_MIGRATE", "do not apply pending migrations at start")
	envInt(fs, &c.GCPhase, "gc-phase", "ARTIFACT_REGISTRY_GC_PHASE", 3, "garbage collection rollout phase: 1 record only, 2 recheck without deleting, 3 delete")
	envInt(fs, &c.GCCleanupWorkers, "gc-cleanup-workers", "ARTIFACT_REGISTRY_GC_CLEANUP_WORKERS", 10, "garbage collection cleanup jobs run at once (each holds a database connection)")
	envInt(fs, &c.GCCleanupRate, "gc-cleanup-rate", "ARTIFACT_REGISTRY_GC_CLEANUP_RATE", 600, "garbage collection candidates per second this instance cleans up at most, so that a drain leaves the database to requests (0: no limit)")
	envInt(fs, &c.DBMaxConns, "db-max-conns", "ARTIFACT_REGISTRY_DB_MAX_CONNS", 0, "database pool size; 0 derives it from the job workers plus 16 for requests")
	envInt(fs, &c.MaxUploadSessionsPerRepository, "max-upload-sessions-per-repository", "ARTIFACT_REGISTRY_MAX_UPLOAD_SESSIONS_PER_REPOSITORY", 1000,
		"open (unexpired) upload sessions one repository may hold, across instances and protocols; 0 = unlimited")
	envInt(fs, &c.AuthFailureLimit, "auth-failure-limit", "ARTIFACT_REGISTRY_AUTH_FAILURE_LIMIT", 10, "failed authentications per minute a client address may make before it gets 429 (0: no limit)")
	envString(fs, &c.TrustedProxiesList, "trusted-proxies", "ARTIFACT_REGISTRY_TRUSTED_PROXIES", "", "comma-separated addresses or CIDRs of reverse proxies whose X-Forwarded-For names the client")
	envInt(fs, &c.NpmMaxPublishBytes, "npm-max-publish-bytes", "ARTIFACT_REGISTRY_NPM_MAX_PUBLISH_BYTES", DefaultNpmMaxPublishBytes, "largest npm publish body in bytes, the tarball in base64 included (larger: 413)")
	envDuration(fs, &c.GCExpiryInterval, "gc-expiry-interval", "ARTIFACT_REGISTRY_GC_EXPIRY_INTERVAL", 10*time.Minute, "how often soft-deleted rows past their namespace's trash retention are purged")
	envDuration(fs, &c.GCReviewDelay, "gc-review-delay", "ARTIFACT_REGISTRY_GC_REVIEW_DELAY", 24*time.Hour, "how long an unreferenced blob waits before garbage collection reviews it")
	envDuration(fs, &c.BodyIdleTimeout, "body-idle-timeout", "ARTIFACT_REGISTRY_BODY_IDLE_TIMEOUT", 30*time.Second, "cut a request body that sends nothing, or a client that reads nothing, for this long")
	envDuration(fs, &c.LifecycleInterval, "lifecycle-interval", "ARTIFACT_REGISTRY_LIFECYCLE_INTERVAL", 24*time.Hour, "how often the lifecycle:apply job applies the enabled lifecycle policies")
	envString(fs, &c.RootKeyURL, "root-key-url", "ARTIFACT_REGISTRY_ROOT_KEY_URL", "",
		"root key wrapping the keys of upstream credentials (base64key://, awskms://, gcpkms://, azurekeyvault://, hashivault://); default generated under <data-dir> for the embedded database, none with --database-url")
	envString(fs, &c.PreviousRootKeyURLsList, "previous-root-key-urls", "ARTIFACT_REGISTRY_PREVIOUS_ROOT_KEY_URLS", "",
		"comma-separated older root keys, still read until a root-key rotation has rewrapped every namespace key")
	envString(fs, &c.RemoteSpoolDir, "remote-spool-dir", "ARTIFACT_REGISTRY_REMOTE_SPOOL_DIR", "",
		"directory of the spool files of remote repositories' upstream fills (tmpfs is fastest); default the system temporary directory")
	envBool(fs, &c.StorageRedirect, "storage-redirect", "ARTIFACT_REGISTRY_STORAGE_REDIRECT",
		"answer blob downloads (OCI blobs, npm tarballs, Maven files) with a short-lived signed URL of the object store (s3:// or gs:// storage only)")
	c.Legacy.Register(fs)
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 20*time.Second, "how long graceful shutdown waits for requests in flight")
}

// Finish fills derived defaults and validates.
func (c *Config) Finish() error {
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return fmt.Errorf("resolve data dir %q: %w", c.DataDir, err)
	}
	c.DataDir = abs
	if c.StorageURL == "" {
		c.StorageURL = "file://" + filepath.Join(c.DataDir, "blobs")
	}
	if c.PublicURL == "" {
		c.PublicURL = "http://" + c.Listen
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("--log-format must be text or json, not %q", c.LogFormat)
	}
	if c.GCExpiryInterval < time.Second {
		return fmt.Errorf("--gc-expiry-interval must be at least 1s, not %s", c.GCExpiryInterval)
	}
	if c.GCPhase < 1 || c.GCPhase > 3 {
		return fmt.Errorf("--gc-phase must be 1, 2 or 3, not %d", c.GCPhase)
	}
	if c.GCReviewDelay <= 0 {
		return fmt.Errorf("--gc-review-delay must be positive, not %s", c.GCReviewDelay)
	}
	if c.GCCleanupWorkers < 1 || c.GCCleanupWorkers > 1000 {
		return fmt.Errorf("--gc-cleanup-workers must be between 1 and 1000, not %d", c.GCCleanupWorkers)
	}
	if c.GCCleanupRate < 0 {
		return fmt.Errorf("--gc-cleanup-rate must not be negative (0 = no limit), not %d", c.GCCleanupRate)
	}
	if c.MaxUploadSessionsPerRepository < 0 {
		return fmt.Errorf("--max-upload-sessions-per-repository must not be negative (0 = unlimited), not %d", c.MaxUploadSessionsPerRepository)
	}
	if c.NpmMaxPublishBytes < 1<<10 {
		return fmt.Errorf("--npm-max-publish-bytes must be at least 1024, not %d", c.NpmMaxPublishBytes)
	}
	if c.LifecycleInterval < time.Minute {
		return fmt.Errorf("--lifecycle-interval must be at least 1m, not %s", c.LifecycleInterval)
	}
	if c.BodyIdleTimeout <= 0 {
		return fmt.Errorf("--body-idle-timeout must be positive, not %s", c.BodyIdleTimeout)
	}
	if c.DBMaxConns < 0 {
		return fmt.Errorf("--db-max-conns must not be negative, not %d", c.DBMaxConns)
	}
	if need := c.JobConns() + minForegroundConns; c.DBMaxConns > 0 && c.DBMaxConns < need {
		return fmt.Errorf("--db-max-conns %d is too small: the job workers hold up to %d connections (%d of them garbage collection cleanups) and requests need at least %d more; use at least %d or 0 to derive it",
			c.DBMaxConns, c.JobConns(), c.GCCleanupWorkers, minForegroundConns, need)
	}
	if err := c.finishStorage(); err != nil {
		return err
	}
	if err := c.finishAuth(); err != nil {
		return err
	}
	c.PreviousRootKeyURLs = nil
	for _, u := range strings.Split(c.PreviousRootKeyURLsList, ",") {
		if u = strings.TrimSpace(u); u != "" {
			c.PreviousRootKeyURLs = append(c.PreviousRootKeyURLs, u)
		}
	}
	if _, err := c.level(); err != nil {
		return err
	}
	return c.Legacy.Finish()
}

// finishStorage refuses --storage-redirect on storage that has no signed
// URLs a client could follow (file://, mem://) or whose signed URLs cannot
// force the response headers (azblob://).
func (c *Config) finishStorage() error {
	if !c.StorageRedirect {
		return nil
	}
	u, err := url.Parse(c.StorageURL)
	if err != nil {
		return fmt.Errorf("--storage-url: %w", err)
	}
	if u.Scheme != "s3" && u.Scheme != "gs" {
		return fmt.Errorf("--storage-redirect (ARTIFACT_REGISTRY_STORAGE_REDIRECT) needs s3:// or gs:// storage: clients cannot be redirected to %s:// storage", u.Scheme)
	}
	return nil
}

// finishAuth checks the admin token's length (never echoing it) and
// parses the trusted proxies.
func (c *Config) finishAuth() error {
	if n := utf8.RuneCountInString(c.AdminToken); n > 0 && n < MinAdminTokenLength {
		return fmt.Errorf("--admin-token (ARTIFACT_REGISTRY_ADMIN_TOKEN) is %d characters long; it must have at least %d, random (e.g. openssl rand -base64 32)",
			n, MinAdminTokenLength)
	}
	if c.AuthFailureLimit < 0 {
		return fmt.Errorf("--auth-failure-limit must not be negative, not %d", c.AuthFailureLimit)
	}
	c.TrustedProxies = nil
	for _, f := range strings.Split(c.TrustedProxiesList, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return fmt.Errorf("--trusted-proxies: %q is neither an address nor a CIDR", f)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		c.TrustedProxies = append(c.TrustedProxies, p.Masked())
	}
	return nil
}

func (c *Config) level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return l, fmt.Errorf("--log-level: %w", err)
	}
	return l, nil
}

// Logger builds the process logger from the log settings. Everything it
// writes is redacted (internal/redact), the admin token included.
func (c *Config) Logger() *slog.Logger {
	redact.Secret(c.AdminToken)
	lvl, _ := c.level()
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, opts)
	if c.LogFormat == "json" {
		h = slog.NewJSONHandler(os.Stderr, opts)
	}
	return slog.New(redact.Handler(h))
}

// JobsLogger is the logger of the job client. River reports routine
// progress at INFO (its producers' job counts every few seconds, client
// start and stop), which would be most of an idle server's log, so its
// INFO records are logged at DEBUG; warnings and errors are unchanged.
func JobsLogger(log *slog.Logger) *slog.Logger { return slog.New(demoteInfo{log.Handler()}) }

type demoteInfo struct{ slog.Handler }

func demoted(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}

func (d demoteInfo) Enabled(ctx context.Context, l slog.Level) bool {
	return d.Handler.Enabled(ctx, demoted(l))
}

func (d demoteInfo) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demoted(r.Level)
	return d.Handler.Handle(ctx, r)
}

func (d demoteInfo) WithAttrs(as []slog.Attr) slog.Handler {
	return demoteInfo{d.Handler.WithAttrs(as)}
}

func (d demoteInfo) WithGroup(name string) slog.Handler { return demoteInfo{d.Handler.WithGroup(name)} }

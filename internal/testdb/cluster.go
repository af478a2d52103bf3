package testdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/pgcluster"
)

const (
	tempPrefix = "testdb-"
	// ownerFile records which process owns a temp cluster dir, so a later
	// run can clean up after a test binary killed by -timeout.
	ownerFile = "owner.pid"
	// shmMinFree is the free space /dev/shm needs before we put clusters
	// there: each database of the schema takes a few hundred MB of RAM.
	shmMinFree  = 4 << 30
	tmpfsMagic  = 0x01021994
	shmDir      = "/dev/shm"
	dirOverride = "TESTDB_DIR"
)

// baseDir picks where test clusters live; see the package comment.
func baseDir() string {
	if d := os.Getenv(dirOverride); d != "" {
		return d
	}
	var st syscall.Statfs_t
	if syscall.Statfs(shmDir, &st) == nil && int64(st.Type) == tmpfsMagic &&
		uint64(st.Bavail)*uint64(st.Bsize) >= shmMinFree {
		return shmDir
	}
	return os.TempDir()
}

// startCluster starts this binary's private cluster, seeded from the
// cache when possible.
func (s *server) startCluster(ctx context.Context) error {
	base := baseDir()
	sweepLeaked(base)
	if err := s.makeTempDir(base); err != nil {
		return err
	}
	if err := s.seed(base); err != nil {
		return err
	}
	return s.startPostgres(ctx)
}

func (s *server) makeTempDir(base string) error {
	dir, err := os.MkdirTemp(base, tempPrefix)
	if err != nil {
		return fmt.Errorf("create cluster temp dir: %w", err)
	}
	s.tmpDir, s.clusterDir = dir, filepath.Join(dir, "postgres")
	// As root the cluster runs as user postgres, which must traverse this
	// (0700 by default) directory; 0711 still hides its listing.
	if err := os.Chmod(dir, 0o711); err != nil {
		return fmt.Errorf("chmod cluster temp dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fmt.Errorf("write owner file: %w", err)
	}
	if err := os.Mkdir(s.clusterDir, 0o700); err != nil {
		return fmt.Errorf("create cluster dir: %w", err)
	}
	return nil
}

// cacheFormat is part of every cache key: bump it when what a cached
// cluster contains changes other than through the migrations.
const cacheFormat = "v2" // v2: the template is vacuumed and analyzed (settleTemplate)

// seed copies the cached data directory for the current migrations into
// the cluster dir. Without one, it takes the entry's build lock (other
// binaries wait on it rather than all migrating at once): fillCache saves
// the entry once the template is built, and releases the lock. A broken
// cache only costs time: we fall back to initdb.
func (s *server) seed(base string) error {
	c, err := cacheOf(base, s.template)
	if err == nil {
		start := time.Now()
		err = s.seedFrom(c)
		s.seedTime = time.Since(start)
	}
	if err != nil {
		s.cacheNote = fmt.Sprintf("; cache not used: %v", err)
		s.seeded = false
		return os.RemoveAll(filepath.Join(s.clusterDir, "data"))
	}
	return nil
}

// cacheOf opens the cache entry of template under base.
func cacheOf(base, template string) (*cache, error) {
	version, err := pgcluster.MajorVersion()
	if err != nil {
		return nil, err
	}
	return openCache(base, cacheFormat+"-pg"+version+"-"+strings.TrimPrefix(template, templatePrefix))
}

func (s *server) seedFrom(c *cache) error {
	dataDir := filepath.Join(s.clusterDir, "data")
	var err error
	if s.seeded, err = c.seed(dataDir); err != nil || s.seeded {
		return err
	}
	unlock, err := c.lock(syscall.LOCK_EX)
	if err != nil {
		return err
	}
	if s.seeded, err = c.copyOut(dataDir); err != nil || s.seeded { // built while we waited
		unlock()
		return err
	}
	s.cache, s.unlockCache = c, unlock
	return nil
}

func (s *server) startPostgres(ctx context.Context) error {
	start := time.Now()
	c, err := pgcluster.Start(ctx, pgcluster.Options{Dir: s.clusterDir, Fast: true, NoAutovacuum: true, MaxConnections: s.maxConns})
	if err != nil {
		return fmt.Errorf("start test cluster: %w", err)
	}
	s.cluster, s.clusterStart, s.baseURL = c, time.Since(start), c.URL("postgres")
	return nil
}

// fillCache saves the freshly migrated cluster when this binary holds the
// build lock. The copy must be of a cleanly stopped cluster, so the server
// is restarted around it. Failing to save only costs later binaries time.
func (s *server) fillCache(ctx context.Context) error {
	if s.cache == nil {
		return nil
	}
	defer func() { s.unlockCache(); s.unlockCache = nil }()
	s.admin.Close()
	if err := s.cluster.Stop(ctx); err != nil {
		return err
	}
	start := time.Now()
	if err := s.cache.save(s.cluster.DataDir()); err != nil {
		s.cacheNote = fmt.Sprintf("; saving the cluster to the cache failed: %v", err)
	} else {
		s.cacheNote = fmt.Sprintf("; saved to cache %s in %v", s.cache.entry(), since(start))
	}
	if err := s.startPostgres(ctx); err != nil {
		return err
	}
	return s.openAdmin(ctx)
}

func (s *server) removeCluster() error {
	if s.cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if err := s.cluster.Stop(ctx); err != nil {
			return fmt.Errorf("stop test cluster: %w", err)
		}
	}
	if s.tmpDir == "" {
		return nil
	}
	if err := os.RemoveAll(s.tmpDir); err != nil {
		return fmt.Errorf("remove cluster temp dir: %w", err)
	}
	return nil
}

// sweepLeaked stops and removes temp clusters left by test binaries that
// died without cleaning up (-timeout, SIGKILL): the cluster runs in its own
// process group and would otherwise live on.
func sweepLeaked(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, tempPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours, or still being set up
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue // owner still alive (or unreadable): leave it
		}
		if pgcluster.Kill(filepath.Join(dir, "postgres")) == nil {
			_ = os.RemoveAll(dir)
		}
	}
}

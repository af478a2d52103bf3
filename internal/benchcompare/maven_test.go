//go:build benchcompare

package benchcompare

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/mvnbench"
)

// mavenBench is mvnbench's workload: the real mvn resolving
// cfg.mvnArtifacts artifacts into an empty local repository.
type mavenBench struct {
	cfg    config
	rows   map[string]*Row
	env    *mvnbench.Env
	deps   string
	stored map[string]bool
}

func newMavenBench(t *testing.T, cfg config, dir string, rows map[string]*Row) *mavenBench {
	t.Helper()
	settings, err := os.ReadFile(filepath.Join(repoRoot(t), "protocol", "maven", "testdata", "settings.xml"))
	if err != nil {
		t.Fatal(err)
	}
	// Reads need no credentials (public repository, static server).
	env, err := mvnbench.NewEnv(dir, settings, "unused")
	if err != nil {
		t.Fatal(err)
	}
	return &mavenBench{cfg: cfg, rows: rows, env: env, deps: mvnbench.Dependencies(cfg.mvnArtifacts), stored: map[string]bool{}}
}

// store puts every artifact (pom, jar and their .sha1, as mvn deploy
// does) into target.
func (b *mavenBench) store(t *testing.T, target mavenTarget) {
	for i := range b.cfg.mvnArtifacts {
		base, pom, jar := mvnbench.Artifact(i)
		for ext, body := range map[string][]byte{".pom": pom, ".jar": jar} {
			sum := sha1.Sum(body)
			target.put(t, base+ext, body)
			target.put(t, base+ext+".sha1", []byte(hex.EncodeToString(sum[:])))
		}
	}
}

func (b *mavenBench) resolve(t *testing.T, url, deps string) (float64, string) {
	dir, err := b.env.Project(url, deps)
	if err != nil {
		t.Fatal(err)
	}
	Settle()
	d, out, err := b.env.Run(context.Background(), dir, mvnbench.Goal)
	if err != nil {
		t.Fatal(err)
	}
	return d.Seconds(), out
}

// baseline is mvn with no dependencies: the JVM's and the plugins'
// start-up, the same whatever the registry.
func (b *mavenBench) baseline(t *testing.T) {
	s, _ := b.resolve(t, "http://127.0.0.1:1/unused", "")
	b.rows["mvn baseline"].Add(Ours, s)
	b.rows["mvn baseline"].Add(Peer, s)
}

func (b *mavenBench) runOnce(t *testing.T, target mavenTarget) {
	if !b.stored[target.col] {
		b.store(t, target)
		b.stored[target.col] = true
	}
	s, out := b.resolve(t, target.url, b.deps)
	if got := mvnbench.Resolved(out); got < b.cfg.mvnArtifacts {
		t.Fatalf("%s: mvn resolved %d artifacts, want %d:\n%s", target.col, got, b.cfg.mvnArtifacts, mvnbench.Tail(out, 40))
	}
	b.rows["mvn resolve"].Add(target.col, s)
}

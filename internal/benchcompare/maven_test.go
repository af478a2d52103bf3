package benchcompare

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mavenBench resolves cfg.mvnArtifacts artifacts with the real mvn (its
// plugins offline from Debian's repository, as the protocol's mvn tests
// run it) into an empty local repository.
type mavenBench struct {
	cfg      config
	rows     map[string]*Row
	dir      string
	settings string
	deps     string
	stored   map[string]bool
}

func newMavenBench(t *testing.T, cfg config, dir string, rows map[string]*Row) *mavenBench {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "protocol", "maven", "testdata", "settings.xml"))
	if err != nil {
		t.Fatal(err)
	}
	b := &mavenBench{cfg: cfg, rows: rows, dir: dir, stored: map[string]bool{}}
	// Reads need no credentials (public repository, static server).
	b.settings = filepath.Join(dir, "settings.xml")
	if err := os.WriteFile(b.settings, bytes.ReplaceAll(raw, []byte("@TOKEN@"), []byte("unused")), 0o644); err != nil {
		t.Fatal(err)
	}
	var deps strings.Builder
	for i := range cfg.mvnArtifacts {
		fmt.Fprintf(&deps, "<dependency><groupId>com.example.bench</groupId><artifactId>dep-%02d</artifactId><version>1.0.0</version></dependency>", i)
	}
	b.deps = deps.String()
	return b
}

// store puts every artifact (pom, jar and their .sha1) into target.
func (b *mavenBench) store(t *testing.T, target mavenTarget) {
	for i := range b.cfg.mvnArtifacts {
		a := fmt.Sprintf("dep-%02d", i)
		base := fmt.Sprintf("com/example/bench/%s/1.0.0/%s-1.0.0", a, a)
		pom := fmt.Appendf(nil, `<project><modelVersion>4.0.0</modelVersion><groupId>com.example.bench</groupId>`+
			`<artifactId>%s</artifactId><version>1.0.0</version></project>`, a)
		jar := bytes.Repeat([]byte(a), 4096)
		for ext, body := range map[string][]byte{".pom": pom, ".jar": jar} {
			sum := sha1.Sum(body)
			target.put(t, base+ext, body)
			target.put(t, base+ext+".sha1", []byte(hex.EncodeToString(sum[:])))
		}
	}
}

// project writes a POM depending on deps with repository url and returns
// its directory.
func (b *mavenBench) project(t testing.TB, url, deps string) string {
	t.Helper()
	d, err := os.MkdirTemp(b.dir, "proj-")
	if err != nil {
		t.Fatal(err)
	}
	pom := `<project><modelVersion>4.0.0</modelVersion><groupId>com.example</groupId><artifactId>bench</artifactId>` +
		`<version>1</version><packaging>pom</packaging><repositories><repository><id>anchor</id><url>` + url +
		`</url></repository></repositories><dependencies>` + deps + `</dependencies></project>`
	if err := os.WriteFile(filepath.Join(d, "pom.xml"), []byte(pom), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// mvn resolves the project's dependencies with a new, empty local
// repository and returns the wall time and mvn's output.
func (b *mavenBench) mvn(t testing.TB, dir string) (time.Duration, string) {
	t.Helper()
	repo, err := os.MkdirTemp(b.dir, "m2-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(repo)
	cmd := exec.Command("mvn", "-s", b.settings, "-B", "--no-transfer-progress", "-Dmaven.repo.local="+repo,
		"org.apache.maven.plugins:maven-dependency-plugin:3.5.0:resolve")
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil || !strings.Contains(string(out), "BUILD SUCCESS") {
		t.Fatalf("mvn: %v\n%s", err, tail(string(out), 4000))
	}
	return d, string(out)
}

// baseline is mvn with no dependencies: the JVM's and the plugins'
// start-up, the same whatever the registry.
func (b *mavenBench) baseline(t *testing.T) {
	d, _ := b.mvn(t, b.project(t, "http://127.0.0.1:1/unused", ""))
	b.rows["mvn baseline"].Add(Ours, d.Seconds())
	b.rows["mvn baseline"].Add(Peer, d.Seconds())
}

func (b *mavenBench) runOnce(t *testing.T, target mavenTarget) {
	if !b.stored[target.col] {
		b.store(t, target)
		b.stored[target.col] = true
	}
	d, out := b.mvn(t, b.project(t, target.url, b.deps))
	if got := strings.Count(out, ":jar:1.0.0:compile"); got < b.cfg.mvnArtifacts {
		t.Fatalf("%s: mvn resolved %d artifacts, want %d:\n%s", target.col, got, b.cfg.mvnArtifacts, tail(out, 4000))
	}
	b.rows["mvn resolve"].Add(target.col, d.Seconds())
}

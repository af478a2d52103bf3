package mvnbench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestArtifactsAndProject(t *testing.T) {
	base, pom, jar := Artifact(7)
	if base != "com/example/bench/dep-07/1.0.0/dep-07-1.0.0" || !strings.Contains(string(pom), "<artifactId>dep-07</artifactId>") || len(jar) == 0 {
		t.Fatalf("Artifact(7) = %s %s (%d jar bytes)", base, pom, len(jar))
	}
	if n := strings.Count(Dependencies(3), "<dependency>"); n != 3 {
		t.Fatalf("Dependencies(3) has %d elements", n)
	}
	e, err := NewEnv(t.TempDir(), []byte("<password>@TOKEN@</password>"), "secret")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(e.Settings); string(b) != "<password>secret</password>" {
		t.Fatalf("settings: %s", b)
	}
	dir, err := e.Project("http://127.0.0.1:1/repo", Dependencies(1))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := os.ReadFile(filepath.Join(dir, "pom.xml"))
	if !strings.Contains(string(p), "<id>anchor</id><url>http://127.0.0.1:1/repo</url>") || !strings.Contains(string(p), "dep-00") {
		t.Fatalf("pom: %s", p)
	}
	if got := Resolved("[INFO]    com.example.bench:dep-00:jar:1.0.0:compile\n[INFO]    com.example.bench:dep-01:jar:1.0.0:compile"); got != 2 {
		t.Fatalf("Resolved = %d", got)
	}
	if got := Tail("a\nb\nc", 2); got != "b\nc" {
		t.Fatalf("Tail = %q", got)
	}
}

package npmsemver

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var semverCorpus = []string{
	"", "*", "x", "X", "latest", "next", "beta", "legacy", "v0", "v1", "=1", "v2-beta", "1", "1.2", "1.2.3",
	"1.2.3-beta.1", "1.2.3+build.5", "1.2.3-rc.1+b", "01.2.3", "1.02.3", "1.2.3-01", "1.2.3-0a",
	"^1", "^1.2", "~1.2.3", "~>1.2", "~ 1.2", "^ 2", ">=1.0.0", ">= 1.0.0", "<2", "<=1.2.3-pre",
	">1.2.3 <2", "1.x", "1.x.x", "1.2.x", "x.1", "1.x.3", "*.1", "1.*", "1 - 2", "1.2.3 - 2.3.4",
	"1.x.3 - 2", "=1.2.3 - 2", "v1.2.3 - v2", "1.2.3 - 2.3.4-pre", "1 || 2", "latest || 1", "1 ||",
	"|| 1", "1.2.3 || >=2 <3 || ~4", "tag-with-dash", "v", "vv1", "==1.2.3", "=v1.2.3", ">=v1",
	"1.2.3.4", "1.2.3-", "1.2.3-beta..1", "1.2.3-beta_1", "a.b.c", "1.2.3 1.2.4", "  1.2.3  ",
	"\t^1\n", "> 1", "< 2 > 1", "~", "^", ">=", "<", "=", "1.2.3-alpha", "1.2.3-alpha.10",
	"1.2.3-alpha.9", "1.2.3-alpha.beta", "1.2.3-1", "1.2.3-2", "1.2.3-10", "2.0.0", "10.0.0",
	"1.10.0", "1.9.0", "1.2.3-rc", "1.2.3-RC", "1.2.3-rc.a", "9007199254740991.0.0",
	"9007199254740992.0.0", "dev", "canary", "2.x.x-beta", "1.2-beta", "^1.2.3-beta", "~1.2.3-beta+b",
}

// TestNpmSemverMatchesNodeSemver compares the port with node-semver (the
// copy bundled with the npm CLI on this machine): valid, validRange and the
// order of valid versions.
func TestNpmSemverMatchesNodeSemver(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required: %v", err)
	}
	npmRoot := npmGlobalModules(t)
	script := `
const semver = require(process.argv[1] + '/semver');
const corpus = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = {valid: {}, range: {}, sorted: []};
for (const s of corpus) { out.valid[s] = semver.valid(s) === s; out.range[s] = semver.validRange(s) !== null; }
out.sorted = corpus.filter(s => semver.valid(s) === s).sort(semver.compare);
console.log(JSON.stringify(out));`
	cmd := exec.Command(node, "-e", script, npmRoot)
	in, _ := json.Marshal(semverCorpus)
	cmd.Stdin = strings.NewReader(string(in))
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var want struct {
		Valid  map[string]bool `json:"valid"`
		Range  map[string]bool `json:"range"`
		Sorted []string        `json:"sorted"`
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	var valid []Version
	for _, s := range semverCorpus {
		v, ok := ParseVersion(s)
		if ok != want.Valid[s] {
			t.Errorf("ValidVersion(%q) = %v, node-semver says %v", s, ok, want.Valid[s])
		}
		if ok {
			valid = append(valid, v)
		}
		if got := ValidRange(s); got != want.Range[s] {
			t.Errorf("ValidRange(%q) = %v, node-semver says %v", s, got, want.Range[s])
		}
	}
	slices.SortStableFunc(valid, func(a, b Version) int { return a.Compare(b) })
	var got []string
	for _, v := range valid {
		got = append(got, v.String())
	}
	if !slices.Equal(got, want.Sorted) {
		t.Errorf("order:\n got  %q\n want %q", got, want.Sorted)
	}
}

// npmGlobalModules finds the node_modules directory of the npm CLI.
func npmGlobalModules(t *testing.T) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm is required: %v", err)
	}
	real, err := filepath.EvalSymlinks(npm)
	if err != nil {
		t.Fatal(err)
	}
	// .../lib/node_modules/npm/bin/npm-cli.js -> .../lib/node_modules/npm/node_modules
	dir := filepath.Join(filepath.Dir(filepath.Dir(real)), "node_modules")
	if _, err := os.Stat(filepath.Join(dir, "semver")); err != nil {
		t.Fatalf("node-semver not found next to npm: %v", err)
	}
	return dir
}

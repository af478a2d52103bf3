package gc

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The rule file format of Prometheus (rule_files), strict: unknown keys
// are errors, as in Prometheus's own loader.
type ruleFile struct {
	Groups []ruleGroup `yaml:"groups"`
}

type ruleGroup struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval,omitempty"`
	Rules    []rule `yaml:"rules"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// TestAlertRules parses gc/alerts.yml and checks that it holds the five
// alarms of docs/garbage-collection.md ("Operational controls", item 3),
// that every rule is well-formed, and that every metric
// it uses is one this package exports.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	f, err := os.Open("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	var rf ruleFile
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	exported := map[string]bool{}
	for _, m := range []string{
		MetricCandidatesTracked, MetricCandidatesDue, MetricCandidatesBackingOff, MetricCandidatesExcluded,
		MetricOldestDueAge, MetricQueueStatsUp, MetricSweepPaused, MetricReclaimEnabled, MetricReclaimStopped,
		MetricPhase, MetricReclaimedObjects, MetricReclaimedBytes, MetricCleanupOutcomes, MetricSweepEnqueued,
		MetricSweepPauses, MetricStrikes, MetricExclusions, MetricReconcileRecorded, MetricStagingPurged,
		MetricBlobLockWait, MetricDedupObjectChecks,
	} {
		exported[m] = true
	}
	metricRef := regexp.MustCompile(`artifact_registry_[a-z0-9_]+`)
	var alerts []string
	uses := map[string][]string{}
	for _, g := range rf.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Fatalf("group %+v: name and rules required", g)
		}
		for _, r := range g.Rules {
			if r.Alert == "" || r.Record != "" {
				t.Fatalf("rule %+v: alerting rules only", r)
			}
			if !regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`).MatchString(r.Alert) {
				t.Errorf("%s: invalid alert name", r.Alert)
			}
			alerts = append(alerts, r.Alert)
			if strings.TrimSpace(r.Expr) == "" {
				t.Errorf("%s: empty expr", r.Alert)
			}
			if err := balanced(r.Expr); err != "" {
				t.Errorf("%s: expr %s", r.Alert, err)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
				}
			}
			switch r.Labels["severity"] {
			case "warning", "critical":
			default:
				t.Errorf("%s: severity %q", r.Alert, r.Labels["severity"])
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: summary and description required", r.Alert)
			}
			for _, m := range metricRef.FindAllString(r.Expr, -1) {
				if !exported[m] {
					t.Errorf("%s: uses %s, which gc does not export", r.Alert, m)
				}
				uses[r.Alert] = append(uses[r.Alert], m)
			}
		}
	}
	want := map[string]string{
		"GCDueCandidatesGrowing":     MetricCandidatesDue,
		"GCSweepPaused":              MetricSweepPaused,
		"GCExcludedCandidates":       MetricCandidatesExcluded,
		"GCReclaimRateAboveBaseline": MetricReclaimedBytes,
		"GCReclamationStopped":       MetricReclaimStopped,
	}
	if len(alerts) != len(want) {
		t.Errorf("alerts %v, want the five of docs/garbage-collection.md", alerts)
	}
	for a, m := range want {
		if !slices.Contains(alerts, a) {
			t.Errorf("alert %s missing", a)
		} else if !slices.Contains(uses[a], m) {
			t.Errorf("alert %s does not use %s", a, m)
		}
	}
}

// balanced checks brackets and quotes of a PromQL expression.
func balanced(expr string) string {
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	inQuote := rune(0)
	for _, c := range expr {
		switch {
		case inQuote != 0:
			if c == inQuote {
				inQuote = 0
			}
		case c == '"' || c == '\'':
			inQuote = c
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, c)
		case c == ')' || c == ']' || c == '}':
			if len(stack) == 0 || stack[len(stack)-1] != pairs[c] {
				return "has unbalanced " + string(c)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if inQuote != 0 || len(stack) != 0 {
		return "is not closed"
	}
	return ""
}

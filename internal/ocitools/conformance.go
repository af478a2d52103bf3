package ocitools

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ConformanceRun is one run of the conformance suite against a registry.
type ConformanceRun struct {
	Registry string // host:port, plain HTTP
	Repo1    string // e.g. ns/repo/one
	Repo2    string
	Username string
	Password string // a namespace ADMIN access token (the suite deletes)
	Version  string // OCI_VERSION: "1.1" or "dev"
	// Out, when set, receives the reports and the result block under
	// Out/<Name>/ (CI keeps them: go test prints a passing test's log
	// only with -v).
	Out string
	// Name is the run's directory under Out; empty means Version.
	Name string
}

// RunConformance runs the suite at bin (Conformance) with every API and
// data category enabled except sha512 content (the registry stores sha256
// only: docs/schema.md "Digests, hashes and enums"), and fails t unless it
// reports 0 failures and 0 errors. It logs the suite's result block.
func RunConformance(t testing.TB, bin string, r ConformanceRun) {
	t.Helper()
	results := t.TempDir()
	cmd := exec.Command(bin)
	cmd.Dir = results
	cmd.Env = append(withoutPrefix(os.Environ(), "OCI_"), r.env(results)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	runErr := cmd.Run()
	block := resultBlock(out.String())
	t.Logf("conformance suite, OCI_VERSION=%s, %s:\n%s", r.Version, time.Since(start).Round(time.Millisecond), block)
	if r.Out != "" {
		keepResults(t, results, filepath.Join(r.Out, cmp.Or(r.Name, r.Version)), block)
	}
	counts, err := junitCounts(filepath.Join(results, "junit.xml"))
	if err != nil {
		t.Fatalf("conformance suite wrote no usable junit.xml (%v); exit: %v; output:\n%s", err, runErr, out.String())
	}
	t.Logf("junit.xml: tests=%d failures=%d errors=%d skipped=%d disabled=%d",
		counts.Tests, counts.Failures, counts.Errors, counts.Skipped, counts.Disabled)
	if runErr != nil || counts.Failures != 0 || counts.Errors != 0 || !strings.Contains(out.String(), "OCI Conformance Result: Pass") {
		t.Errorf("conformance suite OCI_VERSION=%s did not pass (exit: %v); full output:\n%s", r.Version, runErr, out.String())
	}
}

func (r ConformanceRun) env(results string) []string {
	return []string{
		"OCI_REGISTRY=" + r.Registry,
		"OCI_TLS=disabled",
		"OCI_REPO1=" + r.Repo1,
		"OCI_REPO2=" + r.Repo2,
		"OCI_USERNAME=" + r.Username,
		"OCI_PASSWORD=" + r.Password,
		"OCI_VERSION=" + r.Version,
		"OCI_RESULTS_DIR=" + results,
		"OCI_LOG=error",
		// Every API category on, whatever the version's defaults.
		"OCI_API_PING=true",
		"OCI_API_PULL=true",
		"OCI_API_PUSH=true",
		"OCI_API_BLOBS_ATOMIC=true",
		"OCI_API_BLOBS_DELETE=true",
		"OCI_API_BLOBS_DIGEST_HEADER=true",
		"OCI_API_BLOBS_MOUNT_ANONYMOUS=true",
		"OCI_API_BLOBS_UPLOAD_CANCEL=true",
		"OCI_API_MANIFESTS_ATOMIC=true",
		"OCI_API_MANIFESTS_DELETE=true",
		"OCI_API_MANIFESTS_DIGEST_HEADER=true",
		"OCI_API_MANIFESTS_TAG_PARAM=true",
		"OCI_API_TAGS_ATOMIC=true",
		"OCI_API_TAGS_DELETE=true",
		"OCI_API_TAGS_LIST=true",
		"OCI_API_REFERRER=true",
		// Every data category on, except sha512.
		"OCI_DATA_IMAGE=true",
		"OCI_DATA_INDEX=true",
		"OCI_DATA_INDEX_LIST=true",
		"OCI_DATA_ARTIFACT=true",
		"OCI_DATA_SUBJECT=true",
		"OCI_DATA_SUBJECT_MISSING=true",
		"OCI_DATA_ARTIFACT_LIST=true",
		"OCI_DATA_SUBJECT_LIST=true",
		"OCI_DATA_DATA_FIELD=true",
		"OCI_DATA_NONDISTRIBUTABLE=true",
		"OCI_DATA_CUSTOM_FIELDS=true",
		"OCI_DATA_NO_LAYERS=true",
		"OCI_DATA_EMPTY_BLOB=true",
		"OCI_DATA_SHA512=false",
	}
}

// keepResults copies the suite's reports (junit.xml, results.yaml,
// report.html) and its result block (summary.txt) to dir.
func keepResults(t testing.TB, from, dir, block string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Errorf("conformance results: %v", err)
		return
	}
	for _, f := range []string{"junit.xml", "results.yaml", "report.html"} {
		if b, err := os.ReadFile(filepath.Join(from, f)); err == nil {
			_ = os.WriteFile(filepath.Join(dir, f), b, 0o644)
		}
	}
	_ = os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(block), 0o644)
}

func withoutPrefix(env []string, prefix string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}

// resultBlock cuts the suite's summary (from "OCI Conformance Result").
func resultBlock(out string) string {
	if i := strings.Index(out, "OCI Conformance Result"); i >= 0 {
		return out[i:]
	}
	return out
}

type junitSuites struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Skipped  int `xml:"skipped,attr"`
	Disabled int `xml:"disabled,attr"`
}

func junitCounts(path string) (junitSuites, error) {
	var s junitSuites
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := xml.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("parse %s: %w", path, err)
	}
	return s, nil
}

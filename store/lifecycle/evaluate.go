package lifecycle

import (
	"regexp"
	"time"

	"github.com/google/uuid"
)

// Candidate is one artifact a policy may delete: a top-level container
// manifest (one no active index lists), an npm version or a Maven
// version. Candidates reach the evaluator grouped by Group (the image or
// the package) and, within a group, newest push first.
type Candidate struct {
	Group     uuid.UUID
	GroupName string // image name; npm package name; group:artifact
	ID        uuid.UUID
	// Names are what KEEP_REGEX matches and what makes the candidate count
	// for KEEP_LAST_N: a manifest's tags (none: untagged), a version's
	// version string.
	Names            []string
	Label            string // digest or version, for listings
	CreatedAt        time.Time
	LastDownloadedAt *time.Time
	SizeBytes        int64
	// Pinned candidates are always retained (the npm version the latest
	// dist-tag names).
	Pinned bool
}

// Evaluator decides candidates one by one in stream order. It holds the
// compiled rules and the per-group count of the last-N rules only, so it
// evaluates any number of candidates in constant memory.
type Evaluator struct {
	enabled   bool
	minAge    time.Duration
	now       time.Time
	lastN     []int
	patterns  []*regexp.Regexp
	downloads []time.Duration
	builds    int // KEEP_SNAPSHOT_BUILDS: the largest count, 0 = none
	artifacts bool

	group uuid.UUID
	seen  int // counted (named) candidates of the group so far
}

// NewEvaluator compiles a policy. A nil or disabled policy, or one
// without an artifact rule (KEEP_LAST_N, KEEP_REGEX,
// KEEP_DOWNLOADED_WITHIN), deletes no artifact; KEEP_SNAPSHOT_BUILDS alone
// only prunes SNAPSHOT builds.
func NewEvaluator(p *Policy, now time.Time) *Evaluator {
	e := &Evaluator{now: now}
	if p == nil || !p.Enabled {
		return e
	}
	e.enabled = true
	e.minAge = time.Duration(p.MinAgeDays) * 24 * time.Hour
	for _, r := range p.Rules {
		switch r.Type {
		case KeepLastN:
			e.lastN = append(e.lastN, *r.Count)
			e.artifacts = true
		case KeepRegex:
			if re, err := compilePattern(*r.Pattern); err == nil {
				e.patterns = append(e.patterns, re)
			}
			e.artifacts = true
		case KeepDownloadedWithin:
			e.downloads = append(e.downloads, time.Duration(*r.Days)*24*time.Hour)
			e.artifacts = true
		case KeepSnapshotBuilds:
			e.builds = max(e.builds, *r.Count)
		}
	}
	return e
}

// DeletesArtifacts reports whether the policy can delete any artifact;
// when false, callers skip the candidate walk.
func (e *Evaluator) DeletesArtifacts() bool { return e.enabled && e.artifacts }

// PrunesSnapshotBuilds reports whether the policy keeps only the last N
// builds of SNAPSHOT versions.
func (e *Evaluator) PrunesSnapshotBuilds() bool { return e.enabled && e.builds > 0 }

// Delete decides one candidate (Harbor's retention semantics): it is
// deleted when no keep rule retains it, unless it is younger than the
// minimum age or pinned. Candidates must come in stream order.
func (e *Evaluator) Delete(c *Candidate) bool {
	if c.Group != e.group {
		e.group, e.seen = c.Group, 0
	}
	named := len(c.Names) > 0
	rank := e.seen
	if named {
		e.seen++
	}
	if !e.DeletesArtifacts() || c.Pinned || e.young(c.CreatedAt) {
		return false
	}
	if named {
		for _, n := range e.lastN {
			if rank < n {
				return false
			}
		}
		for _, re := range e.patterns {
			for _, name := range c.Names {
				if re.MatchString(name) {
					return false
				}
			}
		}
	}
	if c.LastDownloadedAt != nil {
		for _, d := range e.downloads {
			if e.now.Sub(*c.LastDownloadedAt) <= d {
				return false
			}
		}
	}
	return true
}

func (e *Evaluator) young(created time.Time) bool {
	return e.now.Sub(created) < e.minAge
}

// Build is one timestamped build of a SNAPSHOT version.
type Build struct {
	BuiltAt time.Time
}

// DeleteBuilds returns the indexes of the builds of one SNAPSHOT
// version (newest first) that KEEP_SNAPSHOT_BUILDS does not keep: all but
// the newest N, sparing those younger than the minimum age.
func (e *Evaluator) DeleteBuilds(builds []Build) []int {
	if !e.PrunesSnapshotBuilds() {
		return nil
	}
	var out []int
	for i := e.builds; i < len(builds); i++ {
		if !e.young(builds[i].BuiltAt) {
			out = append(out, i)
		}
	}
	return out
}

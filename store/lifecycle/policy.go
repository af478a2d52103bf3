// Package lifecycle stores lifecycle policies (a namespace default and
// per-repository overrides, docs/lifecycle-policies.md), evaluates them
// over a repository's artifacts and applies them through each format's own
// soft-delete path, so policy deletions go to the trash like a user's.
//
// The evaluation (evaluate.go) is a pure function of the policy, the clock
// and the candidate rows, which are streamed by keyset-paged queries
// (candidates.go) in the order the rules need: one image or package at a
// time, newest push first. Memory is bounded by one page, whatever the
// repository holds.
package lifecycle

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// MaxRules bounds the rules of one policy (also in policy.schema.json):
// every artifact is checked against each rule.
const MaxRules = 10

// DefaultMinAgeDays is the minimum age of a new policy.
const DefaultMinAgeDays = 1

// RuleType names a rule as the API does.
type RuleType string

const (
	KeepLastN            RuleType = "KEEP_LAST_N"
	KeepRegex            RuleType = "KEEP_REGEX"
	KeepDownloadedWithin RuleType = "KEEP_DOWNLOADED_WITHIN"
	KeepSnapshotBuilds   RuleType = "KEEP_SNAPSHOT_BUILDS"
)

var ruleTypes = map[RuleType]enum.LifecycleRuleType{
	KeepLastN:            enum.LifecycleRuleKeepLastN,
	KeepRegex:            enum.LifecycleRuleKeepRegex,
	KeepDownloadedWithin: enum.LifecycleRuleKeepLastDownloadedAt,
	KeepSnapshotBuilds:   enum.LifecycleRuleKeepSnapshotBuilds,
}

func ruleTypeOf(v enum.LifecycleRuleType) RuleType {
	for k, e := range ruleTypes {
		if e == v {
			return k
		}
	}
	return ""
}

// Rule is one keep rule. Count is used by KEEP_LAST_N and
// KEEP_SNAPSHOT_BUILDS, Pattern by KEEP_REGEX, Days by
// KEEP_DOWNLOADED_WITHIN.
type Rule struct {
	Type    RuleType `json:"type"`
	Count   *int     `json:"count,omitempty"`
	Pattern *string  `json:"pattern,omitempty"`
	Days    *int     `json:"days,omitempty"`
}

// Policy is a namespace default (RepositoryID nil) or a repository
// override.
type Policy struct {
	ID           uuid.UUID
	NamespaceID  uuid.UUID
	RepositoryID *uuid.UUID
	Enabled      bool
	MinAgeDays   int
	Rules        []Rule
}

// Input is what setting a policy takes.
type Input struct {
	Enabled    bool   `json:"enabled"`
	MinAgeDays int    `json:"minAgeDays"`
	Rules      []Rule `json:"rules"`
}

// Scope names a policy: a namespace's default (Repository nil) or one
// repository's override.
type Scope struct {
	NamespaceID   uuid.UUID
	NamespaceSlug string
	Repository    *store.Repository
}

// tables are the settings and rules tables of a scope and the rules'
// column naming their settings row.
type tables struct{ settings, rules, fk string }

func (s Scope) tables() (tables, error) {
	if s.Repository == nil {
		return tables{"lifecycle_policy_settings", "lifecycle_rules", "lifecycle_policy_settings_id"}, nil
	}
	var f string
	switch {
	case s.Repository.IsContainer():
		f = "container"
	case s.Repository.Format == enum.FormatNpm:
		f = "npm"
	case s.Repository.Format == enum.FormatMaven:
		f = "maven"
	default:
		return tables{}, errs.New(store.CodeInvalidInput, "repository %s has no lifecycle policies", s.Repository.Name)
	}
	return tables{f + "_repository_lifecycle_policy_settings", f + "_repository_lifecycle_rules",
		f + "_repository_lifecycle_policy_settings_id"}, nil
}

//go:embed policy.schema.json
var policySchemaSource []byte

//go:embed rule_configuration.schema.json
var ruleConfigurationSchemaSource []byte

func compile(url string, src []byte) func() (*jsonschema.Schema, error) {
	return sync.OnceValues(func() (*jsonschema.Schema, error) {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("lifecycle: schema %s: %w", url, err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("lifecycle: schema %s: %w", url, err)
		}
		return c.Compile(url)
	})
}

var (
	policySchema            = compile("urn:artifact-registry:schema:lifecycle-policy", policySchemaSource)
	ruleConfigurationSchema = compile("urn:artifact-registry:schema:lifecycle_rules.rule_configuration", ruleConfigurationSchemaSource)
)

// validate checks a document against a schema; a failure is
// CodeInvalidInput naming the innermost failing location.
func validate(sch func() (*jsonschema.Schema, error), what string, doc []byte) error {
	s, err := sch()
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return errs.New(store.CodeInvalidInput, "invalid %s: %v", what, err)
	}
	if err := s.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return errs.New(store.CodeInvalidInput, "invalid %s: %s", what, schemaMessage(ve))
		}
		return errs.New(store.CodeInvalidInput, "invalid %s: %v", what, err)
	}
	return nil
}

// schemaMessage is the most specific failure of a validation: the first
// leaf cause, with its location.
func schemaMessage(ve *jsonschema.ValidationError) string {
	leaf := ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	loc := "/"
	if len(leaf.InstanceLocation) > 0 {
		loc = ""
		for _, p := range leaf.InstanceLocation {
			loc += "/" + p
		}
	}
	return fmt.Sprintf("at %s: %s", loc, leaf.ErrorKind.LocalizedString(printer))
}

var printer = message.NewPrinter(language.English)

// Validate checks a policy input against the embedded JSON schema (shape,
// bounds, at most MaxRules rules, the fields each rule type needs) and
// that every KEEP_REGEX pattern compiles (RE2 syntax).
func Validate(in Input) error {
	if in.Rules == nil {
		in.Rules = []Rule{}
	}
	doc, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("lifecycle: encode policy: %w", err)
	}
	if err := validate(policySchema, "lifecycle policy", doc); err != nil {
		return err
	}
	for i, r := range in.Rules {
		if r.Type == KeepRegex {
			if _, err := compilePattern(*r.Pattern); err != nil {
				return errs.New(store.CodeInvalidInput, "invalid lifecycle policy: at /rules/%d/pattern: %v", i, err)
			}
		}
	}
	return nil
}

// compilePattern anchors a KEEP_REGEX pattern: it must match the whole
// tag or version.
func compilePattern(p string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + p + `)$`)
}

// configuration is the rule_configuration document of a rule.
func configuration(r Rule) ([]byte, error) {
	m := map[string]any{}
	switch {
	case r.Count != nil:
		m["count"] = *r.Count
	case r.Pattern != nil:
		m["pattern"] = *r.Pattern
	case r.Days != nil:
		m["days"] = *r.Days
	}
	doc, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("lifecycle: encode rule: %w", err)
	}
	return doc, validate(ruleConfigurationSchema, "rule configuration", doc)
}

// Store reads, writes, previews and runs lifecycle policies.
type Store struct {
	core *store.Store
	pool db.Queryer
	opts Options
}

// New returns the lifecycle store over the core store.
func New(core *store.Store, opts Options) *Store {
	return &Store{core: core, pool: core.Pool(), opts: opts.withDefaults()}
}

// Get returns the policy of a scope itself (nil when it has none; a
// repository without an override falls back to the namespace default,
// which Effective resolves).
func (s *Store) Get(ctx context.Context, sc Scope) (*Policy, error) {
	return s.get(ctx, s.pool, sc)
}

func (s *Store) get(ctx context.Context, q db.Queryer, sc Scope) (*Policy, error) {
	t, err := sc.tables()
	if err != nil {
		return nil, err
	}
	p := &Policy{NamespaceID: sc.NamespaceID}
	where, args := `namespace_id = $1`, []any{sc.NamespaceID}
	if sc.Repository != nil {
		where, args = `namespace_id = $1 AND repository_id = $2`, append(args, sc.Repository.ID)
		id := sc.Repository.ID
		p.RepositoryID = &id
	}
	err = q.QueryRow(ctx, `SELECT id, enabled, min_age_days FROM `+t.settings+` WHERE `+where, args...).
		Scan(&p.ID, &p.Enabled, &p.MinAgeDays)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lifecycle: read policy: %w", err)
	}
	rows, err := q.Query(ctx, `SELECT rule_type, rule_configuration FROM `+t.rules+`
		WHERE namespace_id = $1 AND `+t.fk+` = $2 ORDER BY id`, sc.NamespaceID, p.ID)
	if err != nil {
		return nil, fmt.Errorf("lifecycle: read rules: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			typ enum.LifecycleRuleType
			doc []byte
		)
		if err := rows.Scan(&typ, &doc); err != nil {
			return nil, fmt.Errorf("lifecycle: read rules: %w", err)
		}
		r := Rule{Type: ruleTypeOf(typ)}
		if err := json.Unmarshal(doc, &r); err != nil {
			return nil, fmt.Errorf("lifecycle: stored rule configuration: %w", err)
		}
		r.Type = ruleTypeOf(typ)
		p.Rules = append(p.Rules, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lifecycle: read rules: %w", err)
	}
	return p, nil
}

// Effective is the policy that applies to a repository: its override
// when it has one, else the namespace default (nil: none).
func (s *Store) Effective(ctx context.Context, repo *store.Repository) (*Policy, error) {
	p, err := s.Get(ctx, Scope{NamespaceID: repo.NamespaceID, Repository: repo})
	if err != nil || p != nil {
		return p, err
	}
	return s.Get(ctx, Scope{NamespaceID: repo.NamespaceID})
}

// Set validates and stores the policy of a scope, replacing its rules, in
// one transaction; invalid input writes nothing.
func (s *Store) Set(ctx context.Context, sc Scope, in Input) (*Policy, error) {
	if err := Validate(in); err != nil {
		return nil, err
	}
	t, err := sc.tables()
	if err != nil {
		return nil, err
	}
	confs := make([][]byte, len(in.Rules))
	types := make([]int16, len(in.Rules))
	for i, r := range in.Rules {
		if confs[i], err = configuration(r); err != nil {
			return nil, err
		}
		types[i] = int16(ruleTypes[r.Type])
	}
	var out *Policy
	err = db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		if sc.Repository != nil {
			// The repository must still be active while its override is
			// written (a purge deletes overrides first).
			_, repo, err := store.LockRepository(ctx, tx, store.RepositoryRef{Namespace: sc.NamespaceSlug, ID: sc.Repository.ID}, "FOR KEY SHARE")
			if err != nil {
				return err
			}
			if repo.SoftDeletedAt != nil {
				return errs.New(store.CodeNotFound, "repository %s/%s not found (it is in the trash)", sc.NamespaceSlug, repo.Name)
			}
		}
		cur, err := s.get(ctx, tx, sc)
		if err != nil {
			return err
		}
		id := db.NewID()
		if cur == nil {
			cols, vals, args := "id, namespace_id, enabled, min_age_days", "$1, $2, $3, $4", []any{id, sc.NamespaceID, in.Enabled, in.MinAgeDays}
			if sc.Repository != nil {
				cols, vals, args = cols+", repository_id", vals+", $5", append(args, sc.Repository.ID)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+t.settings+` (`+cols+`) VALUES (`+vals+`)`, args...); err != nil {
				return fmt.Errorf("lifecycle: insert policy: %w", err)
			}
		} else {
			id = cur.ID
			if _, err := tx.Exec(ctx, `UPDATE `+t.settings+` SET enabled = $3, min_age_days = $4 WHERE namespace_id = $1 AND id = $2`,
				sc.NamespaceID, id, in.Enabled, in.MinAgeDays); err != nil {
				return fmt.Errorf("lifecycle: update policy: %w", err)
			}
			if _, err := tx.Exec(ctx, `DELETE FROM `+t.rules+` WHERE namespace_id = $1 AND `+t.fk+` = $2`, sc.NamespaceID, id); err != nil {
				return fmt.Errorf("lifecycle: replace rules: %w", err)
			}
		}
		if len(types) > 0 {
			strs := make([]string, len(confs))
			for i, c := range confs {
				strs[i] = string(c)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+t.rules+` (id, namespace_id, `+t.fk+`, rule_type, rule_configuration)
				SELECT u.id, $1, $2, u.typ, u.conf FROM unnest($3::uuid[], $4::smallint[], $5::jsonb[]) WITH ORDINALITY AS u(id, typ, conf, n)
				ORDER BY u.n`, sc.NamespaceID, id, db.NewIDs(len(types)), types, strs); err != nil {
				return fmt.Errorf("lifecycle: insert rules: %w", err)
			}
		}
		out, err = s.get(ctx, tx, sc)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

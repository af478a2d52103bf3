package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// Virtual repositories (docs/virtual-repositories.md): one name over an
// ordered list of hosted, remote and virtual repositories of the same
// namespace and format, each with allow/deny rules, an optional deploy
// target and reserved name patterns. The three formats have the same
// three tables (container_, maven_, npm_virtual_*), so the settings are
// written and read here once, by table family; the formats' protocols
// resolve through them.

// Bounds of a virtual repository's settings.
const (
	MaxVirtualUpstreams        = 50
	MaxVirtualRulesPerUpstream = 50
	MaxVirtualReservedPatterns = 50
	MaxVirtualPatternLength    = 255
	// MaxVirtualDepth bounds how deep virtual repositories nest (a
	// virtual upstream of a virtual upstream ...).
	MaxVirtualDepth = 8
)

// VirtualRule is an allow or deny rule of one upstream. Field is the
// format's target field (enum.ContainerTargetField, enum.NpmTargetField
// or enum.MavenTargetField).
type VirtualRule struct {
	Type    enum.UpstreamRuleType
	Field   int16
	Pattern string
}

// VirtualUpstreamInput names one upstream of a virtual repository.
type VirtualUpstreamInput struct {
	Repository string // name in the virtual's namespace
	Rules      []VirtualRule
}

// VirtualInput is the whole settings of a virtual repository: a create
// writes them, an update replaces them (the upstream list in the order
// given).
type VirtualInput struct {
	Upstreams []VirtualUpstreamInput
	// DeployTo names the hosted upstream that receives writes; nil: none.
	DeployTo         *string
	ReservedPatterns []string
}

// VirtualUpstream is one upstream of a virtual repository, in order.
type VirtualUpstream struct {
	ID         uuid.UUID
	Position   int // 1-based, whatever the table's own base
	Repository *Repository
	Rules      []VirtualRule
}

// VirtualSettings are a virtual repository's settings.
type VirtualSettings struct {
	ID               uuid.UUID
	NamespaceID      uuid.UUID
	RepositoryID     uuid.UUID
	Format           enum.Format
	Upstreams        []VirtualUpstream
	DeployTo         *uuid.UUID
	ReservedPatterns []string
	ChangedAt        time.Time
}

// virtualTables names one format family's tables and columns.
type virtualTables struct {
	virtual, upstreams, rules string
	virtualFK, upstreamFK     string // upstreams.<virtualFK>, rules.<upstreamFK>
	// base is the first position: the npm table is 0-based.
	base int
	// validField tells whether a rule's target field exists.
	validField func(int16) bool
}

var (
	containerVirtual = virtualTables{"container_virtual_repositories", "container_virtual_repository_upstreams", "container_virtual_upstream_rules",
		"container_virtual_repository_id", "container_virtual_repository_upstream_id", 1,
		func(v int16) bool { return enum.ContainerTargetField(v).Valid() }}
	mavenVirtual = virtualTables{"maven_virtual_repositories", "maven_virtual_repository_upstreams", "maven_virtual_upstream_rules",
		"maven_virtual_repository_id", "maven_virtual_repository_upstream_id", 1,
		func(v int16) bool { return enum.MavenTargetField(v).Valid() }}
	npmVirtual = virtualTables{"npm_virtual_repositories", "npm_virtual_repository_upstreams", "npm_virtual_upstream_rules",
		"npm_virtual_repository_id", "npm_virtual_repository_upstream_id", 0,
		func(v int16) bool { return enum.NpmTargetField(v).Valid() }}
	allVirtualTables = []virtualTables{containerVirtual, mavenVirtual, npmVirtual}
)

func virtualTablesOf(f enum.Format) (virtualTables, error) {
	switch f {
	case enum.FormatDocker, enum.FormatOCI:
		return containerVirtual, nil
	case enum.FormatMaven:
		return mavenVirtual, nil
	case enum.FormatNpm:
		return npmVirtual, nil
	}
	return virtualTables{}, errs.New(CodeInvalidInput, "unknown repository format %s", formatName(f))
}

// ValidateVirtualPattern checks a rule or reserved pattern: 1 to 255
// characters, printable, no spaces.
func ValidateVirtualPattern(what, p string) error {
	switch {
	case p == "":
		return errs.New(CodeInvalidInput, "%s: a pattern cannot be empty", what)
	case !utf8.ValidString(p):
		return errs.New(CodeInvalidInput, "%s: a pattern must be valid UTF-8", what)
	case utf8.RuneCountInString(p) > MaxVirtualPatternLength:
		return errs.New(CodeInvalidInput, "%s: a pattern has at most %d characters", what, MaxVirtualPatternLength)
	}
	for _, r := range p {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return errs.New(CodeInvalidInput, "%s: pattern %q holds a space or a control character", what, p)
		}
	}
	return nil
}

// validateVirtualInput checks what needs no database.
func validateVirtualInput(vt virtualTables, in VirtualInput) error {
	if len(in.Upstreams) == 0 {
		return errs.New(CodeInvalidInput, "virtual.upstreams: name at least one upstream repository")
	}
	if len(in.Upstreams) > MaxVirtualUpstreams {
		return errs.New(CodeInvalidInput, "virtual.upstreams: at most %d upstreams, not %d", MaxVirtualUpstreams, len(in.Upstreams))
	}
	seen := map[string]bool{}
	for i, u := range in.Upstreams {
		what := fmt.Sprintf("virtual.upstreams[%d]", i)
		if err := ValidateRepositoryName(what+".repository", u.Repository); err != nil {
			return err
		}
		if seen[u.Repository] {
			return errs.New(CodeInvalidInput, "%s: repository %q is listed twice", what, u.Repository)
		}
		seen[u.Repository] = true
		if len(u.Rules) > MaxVirtualRulesPerUpstream {
			return errs.New(CodeInvalidInput, "%s.rules: at most %d rules, not %d", what, MaxVirtualRulesPerUpstream, len(u.Rules))
		}
		for j, r := range u.Rules {
			rw := fmt.Sprintf("%s.rules[%d]", what, j)
			if !r.Type.Valid() {
				return errs.New(CodeInvalidInput, "%s: unknown rule type %d", rw, r.Type)
			}
			if !vt.validField(r.Field) {
				return errs.New(CodeInvalidInput, "%s: this format's rules cannot match that field", rw)
			}
			if err := ValidateVirtualPattern(rw, r.Pattern); err != nil {
				return err
			}
		}
	}
	if in.DeployTo != nil && !seen[*in.DeployTo] {
		return errs.New(CodeInvalidInput, "virtual.deployTo: %q is not one of the upstreams", *in.DeployTo)
	}
	if len(in.ReservedPatterns) > MaxVirtualReservedPatterns {
		return errs.New(CodeInvalidInput, "virtual.reservedPatterns: at most %d patterns, not %d", MaxVirtualReservedPatterns, len(in.ReservedPatterns))
	}
	for i, p := range in.ReservedPatterns {
		if err := ValidateVirtualPattern(fmt.Sprintf("virtual.reservedPatterns[%d]", i), p); err != nil {
			return err
		}
	}
	return nil
}

// VirtualChild returns the ChildWriter of CreateRepository and
// UpdateRepository for a virtual repository of format f: it writes the
// virtual row (created, or locked and changed) and replaces the upstream
// list, positions renumbered in the order given (the deferrable unique
// constraint on positions lets kept rows move past each other), rules
// replaced. Upstreams must be active repositories of the same namespace
// and format, never the virtual itself, and no virtual upstream may list
// this one, however deep (a cycle); the deploy target must be a HOSTED
// upstream. The checks and the write run in the caller's transaction
// under a per-namespace advisory lock, so that two changes cannot close
// a cycle between them.
func VirtualChild(f enum.Format, in VirtualInput) (ChildWriter, error) {
	vt, err := virtualTablesOf(f)
	if err != nil {
		return nil, err
	}
	if err := validateVirtualInput(vt, in); err != nil {
		return nil, err
	}
	return func(ctx context.Context, tx pgx.Tx, ns *Namespace, repo *Repository) error {
		if repo.Kind != enum.KindVirtual {
			return errs.New(CodeInvalidInput, "repository %s is %s, not VIRTUAL: it takes no virtual settings", repo.Name, strings.ToUpper(repo.Kind.String()))
		}
		if !sameFamily(repo.Format, f) {
			return errs.New(CodeInvalidInput, "virtual settings of another format")
		}
		return writeVirtual(ctx, tx, vt, ns, repo, in)
	}, nil
}

// sameFamily: DOCKER and OCI share the container tables.
func sameFamily(a, b enum.Format) bool {
	c := func(f enum.Format) bool { return f == enum.FormatDocker || f == enum.FormatOCI }
	return a == b || (c(a) && c(b))
}

func writeVirtual(ctx context.Context, tx pgx.Tx, vt virtualTables, ns *Namespace, repo *Repository, in VirtualInput) error {
	// One writer of virtual settings per namespace at a time: the cycle
	// check reads other virtuals' lists, which a concurrent change could
	// otherwise alter between the check and the commit.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('virtual-settings:' || $1::text, 0))`, ns.ID); err != nil {
		return fmt.Errorf("lock virtual settings: %w", err)
	}
	names := make([]string, len(in.Upstreams))
	for i, u := range in.Upstreams {
		names[i] = u.Repository
	}
	// FOR SHARE: a member cannot be moved to the trash (FOR NO KEY
	// UPDATE) while it is being added.
	rows, err := tx.Query(ctx, `SELECT `+repositoryColumns+` FROM repositories r
		WHERE r.namespace_id = $1 AND r.name = ANY($2) FOR SHARE`, ns.ID, names)
	if err != nil {
		return fmt.Errorf("load upstream repositories: %w", err)
	}
	found, err := collectRepositories(rows)
	if err != nil {
		return fmt.Errorf("load upstream repositories: %w", err)
	}
	byName := make(map[string]*Repository, len(found))
	for _, r := range found {
		byName[r.Name] = r
	}
	members := make([]*Repository, len(in.Upstreams))
	for i, u := range in.Upstreams {
		m := byName[u.Repository]
		switch {
		case m == nil:
			return errs.New(CodeNotFound, "virtual.upstreams[%d]: repository %q not found in namespace %q", i, u.Repository, ns.Slug)
		case m.SoftDeletedAt != nil:
			return errs.New(CodeInvalidInput, "virtual.upstreams[%d]: repository %q is in the trash", i, u.Repository)
		case m.ID == repo.ID:
			return errs.New(CodeInvalidInput, "virtual.upstreams[%d]: a virtual repository cannot list itself", i)
		case m.Format != repo.Format:
			return errs.New(CodeInvalidInput, "virtual.upstreams[%d]: repository %q is %s; the upstreams of a %s virtual repository are %s repositories",
				i, u.Repository, formatName(m.Format), formatName(repo.Format), formatName(repo.Format))
		}
		members[i] = m
	}
	var deployTo *uuid.UUID
	if in.DeployTo != nil {
		d := byName[*in.DeployTo]
		if d.Kind != enum.KindHosted {
			return errs.New(CodeInvalidInput, "virtual.deployTo: repository %q is %s; writes go to a HOSTED upstream", d.Name, strings.ToUpper(d.Kind.String()))
		}
		deployTo = &d.ID
	}
	if err := checkVirtualCycle(ctx, tx, vt, ns, repo, members); err != nil {
		return err
	}
	patterns := in.ReservedPatterns
	if patterns == nil {
		patterns = []string{}
	}
	var virtualID uuid.UUID
	err = tx.QueryRow(ctx, `SELECT id FROM `+vt.virtual+` WHERE namespace_id = $1 AND repository_id = $2 FOR UPDATE`,
		ns.ID, repo.ID).Scan(&virtualID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		virtualID = db.NewID()
		if _, err := tx.Exec(ctx, `INSERT INTO `+vt.virtual+` (id, namespace_id, repository_id, deploy_to_repository_id, reserved_patterns)
			VALUES ($1, $2, $3, $4, $5)`, virtualID, ns.ID, repo.ID, deployTo, patterns); err != nil {
			return fmt.Errorf("insert %s row: %w", vt.virtual, err)
		}
	case err != nil:
		return fmt.Errorf("lock %s row: %w", vt.virtual, err)
	default:
		if _, err := tx.Exec(ctx, `UPDATE `+vt.virtual+` SET deploy_to_repository_id = $3, reserved_patterns = $4, settings_changed_at = now()
			WHERE namespace_id = $1 AND id = $2`, ns.ID, virtualID, deployTo, patterns); err != nil {
			return fmt.Errorf("update %s row: %w", vt.virtual, err)
		}
	}
	// Renumber: rows of upstreams that stay keep their ids and move to
	// their new positions (the unique constraint is checked at commit),
	// the others go (their rules cascade), new ones are inserted.
	existing := map[uuid.UUID]uuid.UUID{}
	rows, err = tx.Query(ctx, `SELECT upstream_repository_id, id FROM `+vt.upstreams+`
		WHERE namespace_id = $1 AND `+vt.virtualFK+` = $2`, ns.ID, virtualID)
	if err != nil {
		return fmt.Errorf("load upstream list: %w", err)
	}
	for rows.Next() {
		var repoID, id uuid.UUID
		if err := rows.Scan(&repoID, &id); err != nil {
			rows.Close()
			return fmt.Errorf("load upstream list: %w", err)
		}
		existing[repoID] = id
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load upstream list: %w", err)
	}
	keep := make([]uuid.UUID, 0, len(members))
	upstreamIDs := make([]uuid.UUID, len(members))
	for i, m := range members {
		if id, ok := existing[m.ID]; ok {
			upstreamIDs[i] = id
			keep = append(keep, id)
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM `+vt.upstreams+` WHERE namespace_id = $1 AND `+vt.virtualFK+` = $2 AND id <> ALL($3)`,
		ns.ID, virtualID, keep); err != nil {
		return fmt.Errorf("remove upstreams: %w", err)
	}
	if len(keep) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM `+vt.rules+` WHERE namespace_id = $1 AND `+vt.upstreamFK+` = ANY($2)`, ns.ID, keep); err != nil {
			return fmt.Errorf("remove upstream rules: %w", err)
		}
	}
	for i, m := range members {
		pos := vt.base + i
		if upstreamIDs[i] != uuid.Nil {
			if _, err := tx.Exec(ctx, `UPDATE `+vt.upstreams+` SET position = $3 WHERE namespace_id = $1 AND id = $2`,
				ns.ID, upstreamIDs[i], pos); err != nil {
				return fmt.Errorf("renumber upstream: %w", err)
			}
			continue
		}
		upstreamIDs[i] = db.NewID()
		if _, err := tx.Exec(ctx, `INSERT INTO `+vt.upstreams+` (id, namespace_id, `+vt.virtualFK+`, upstream_repository_id, position)
			VALUES ($1, $2, $3, $4, $5)`, upstreamIDs[i], ns.ID, virtualID, m.ID, pos); err != nil {
			return fmt.Errorf("insert upstream: %w", err)
		}
	}
	for i, u := range in.Upstreams {
		for _, r := range u.Rules {
			if _, err := tx.Exec(ctx, `INSERT INTO `+vt.rules+` (id, namespace_id, `+vt.upstreamFK+`, rule_type, pattern, target_field)
				VALUES ($1, $2, $3, $4, $5, $6)`, db.NewID(), ns.ID, upstreamIDs[i], int16(r.Type), r.Pattern, r.Field); err != nil {
				return fmt.Errorf("insert upstream rule: %w", err)
			}
		}
	}
	return nil
}

// checkVirtualCycle refuses an upstream list through which the virtual
// would reach itself, and nesting deeper than MaxVirtualDepth.
func checkVirtualCycle(ctx context.Context, tx pgx.Tx, vt virtualTables, ns *Namespace, repo *Repository, members []*Repository) error {
	names := map[uuid.UUID]string{repo.ID: repo.Name}
	parent := map[uuid.UUID]uuid.UUID{}
	var level []uuid.UUID
	for _, m := range members {
		if m.Kind == enum.KindVirtual {
			level = append(level, m.ID)
			names[m.ID] = m.Name
			parent[m.ID] = repo.ID
		}
	}
	for depth := 1; len(level) > 0; depth++ {
		if depth > MaxVirtualDepth {
			return errs.New(CodeInvalidInput, "virtual.upstreams: virtual repositories nest at most %d deep", MaxVirtualDepth)
		}
		rows, err := tx.Query(ctx, `SELECT v.repository_id, r.id, r.name FROM `+vt.virtual+` v
			JOIN `+vt.upstreams+` u ON u.namespace_id = v.namespace_id AND u.`+vt.virtualFK+` = v.id
			JOIN repositories r ON r.namespace_id = u.namespace_id AND r.id = u.upstream_repository_id
			WHERE v.namespace_id = $1 AND v.repository_id = ANY($2) AND r.kind = $3`, ns.ID, level, int16(enum.KindVirtual))
		if err != nil {
			return fmt.Errorf("load nested virtual repositories: %w", err)
		}
		var next []uuid.UUID
		for rows.Next() {
			var from, id uuid.UUID
			var name string
			if err := rows.Scan(&from, &id, &name); err != nil {
				rows.Close()
				return fmt.Errorf("load nested virtual repositories: %w", err)
			}
			if id == repo.ID {
				rows.Close()
				path := []string{repo.Name}
				for at := from; at != repo.ID; at = parent[at] {
					path = append(path, names[at])
				}
				path = append(path, repo.Name)
				slices.Reverse(path[1 : len(path)-1])
				return errs.New(CodeInvalidInput, "virtual.upstreams: the list would make a cycle (%s)", strings.Join(path, " -> "))
			}
			if _, seen := parent[id]; !seen {
				parent[id], names[id] = from, name
				next = append(next, id)
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("load nested virtual repositories: %w", err)
		}
		level = next
	}
	return nil
}

// VirtualSettingsByRepositories loads the settings of the virtual
// repositories among repos (of one namespace, any format), keyed by
// repository id, upstreams in order with their repositories and rules.
// Two round trips whatever the number of repositories.
func (s *Store) VirtualSettingsByRepositories(ctx context.Context, namespaceID uuid.UUID, repos []uuid.UUID) (map[uuid.UUID]*VirtualSettings, error) {
	return virtualSettings(ctx, s.pool, namespaceID, repos)
}

func virtualSettings(ctx context.Context, q db.Queryer, namespaceID uuid.UUID, repos []uuid.UUID) (map[uuid.UUID]*VirtualSettings, error) {
	out := map[uuid.UUID]*VirtualSettings{}
	if len(repos) == 0 {
		return out, nil
	}
	var parts []string
	for i, vt := range allVirtualTables {
		parts = append(parts, fmt.Sprintf(`SELECT %d, v.id, v.repository_id, v.deploy_to_repository_id, v.reserved_patterns, v.settings_changed_at,
			u.id, u.position, r2.format, `+repositoryColumns+`
			FROM %s v
			JOIN repositories r2 ON r2.namespace_id = v.namespace_id AND r2.id = v.repository_id
			LEFT JOIN %s u ON u.namespace_id = v.namespace_id AND u.%s = v.id
			LEFT JOIN repositories r ON r.namespace_id = u.namespace_id AND r.id = u.upstream_repository_id
			WHERE v.namespace_id = $1 AND v.repository_id = ANY($2)`, i, vt.virtual, vt.upstreams, vt.virtualFK))
	}
	rows, err := q.Query(ctx, strings.Join(parts, " UNION ALL ")+` ORDER BY 3, 8`, namespaceID, repos)
	if err != nil {
		return nil, fmt.Errorf("load virtual settings: %w", err)
	}
	type upRef struct {
		family int
		vs     *VirtualSettings
		idx    int
	}
	byUpstream := map[uuid.UUID]upRef{}
	var familyUpstreams [3][]uuid.UUID
	for rows.Next() {
		var (
			family    int
			vs        VirtualSettings
			upID      *uuid.UUID
			pos       *int
			vformat   int16
			r         Repository
			rid, rns  *uuid.UUID
			rname     *string
			rf, rk    *int16
			rv        *int16
			ac, dc    *int64
			sb        *int64
			createdAt *time.Time
		)
		if err := rows.Scan(&family, &vs.ID, &vs.RepositoryID, &vs.DeployTo, &vs.ReservedPatterns, &vs.ChangedAt,
			&upID, &pos, &vformat, &rid, &rns, &rname, &r.Description, &rf, &rk, &rv,
			&ac, &dc, &sb, &r.LastUpdatedAt, &createdAt, &r.SoftDeletedAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load virtual settings: %w", err)
		}
		cur := out[vs.RepositoryID]
		if cur == nil {
			vs.NamespaceID = namespaceID
			vs.Format = enum.Format(vformat)
			if vs.ReservedPatterns == nil {
				vs.ReservedPatterns = []string{}
			}
			cur = &vs
			out[vs.RepositoryID] = cur
		}
		if upID == nil || rid == nil {
			continue
		}
		r.ID, r.NamespaceID, r.Name = *rid, *rns, *rname
		r.Format, r.Kind, r.Visibility = enum.Format(*rf), enum.Kind(*rk), enum.Visibility(*rv)
		r.ArtifactsCount, r.DownloadsCount, r.SizeBytes, r.CreatedAt = *ac, *dc, *sb, *createdAt
		cur.Upstreams = append(cur.Upstreams, VirtualUpstream{ID: *upID, Position: *pos, Repository: &r})
		byUpstream[*upID] = upRef{family, cur, len(cur.Upstreams) - 1}
		familyUpstreams[family] = append(familyUpstreams[family], *upID)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load virtual settings: %w", err)
	}
	// Positions are renumbered on every write, but the npm table's older
	// rows may have gaps: present them 1..n in order.
	for _, vs := range out {
		for i := range vs.Upstreams {
			vs.Upstreams[i].Position = i + 1
		}
	}
	parts = parts[:0]
	for i, vt := range allVirtualTables {
		if len(familyUpstreams[i]) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf(`SELECT %s, rule_type, target_field, pattern, id FROM %s
			WHERE namespace_id = $1 AND %s = ANY($%d)`, vt.upstreamFK, vt.rules, vt.upstreamFK, len(parts)+2))
	}
	if len(parts) == 0 {
		return out, nil
	}
	args := []any{namespaceID}
	for i := range allVirtualTables {
		if len(familyUpstreams[i]) > 0 {
			args = append(args, familyUpstreams[i])
		}
	}
	rows, err = q.Query(ctx, strings.Join(parts, " UNION ALL ")+` ORDER BY 1, 5`, args...)
	if err != nil {
		return nil, fmt.Errorf("load virtual rules: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			upID    uuid.UUID
			ruleID  uuid.UUID
			t, f    int16
			pattern string
		)
		if err := rows.Scan(&upID, &t, &f, &pattern, &ruleID); err != nil {
			return nil, fmt.Errorf("load virtual rules: %w", err)
		}
		ref, ok := byUpstream[upID]
		if !ok {
			continue
		}
		u := &ref.vs.Upstreams[ref.idx]
		u.Rules = append(u.Rules, VirtualRule{Type: enum.UpstreamRuleType(t), Field: f, Pattern: pattern})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load virtual rules: %w", err)
	}
	return out, nil
}

// VirtualTree loads a virtual repository's settings and those of every
// virtual repository it lists, however deep (bounded by
// MaxVirtualDepth), keyed by repository id: what a protocol resolves a
// name through. One round trip per nesting level: the upstream list with
// each upstream's repository and rules.
func (s *Store) VirtualTree(ctx context.Context, format enum.Format, namespaceID, repositoryID uuid.UUID) (map[uuid.UUID]*VirtualSettings, error) {
	vt, err := virtualTablesOf(format)
	if err != nil {
		return nil, err
	}
	out := map[uuid.UUID]*VirtualSettings{}
	level := []uuid.UUID{repositoryID}
	for depth := 0; len(level) > 0 && depth <= MaxVirtualDepth; depth++ {
		m, err := virtualFamilySettings(ctx, s.pool, vt, namespaceID, level)
		if err != nil {
			return nil, db.MapErr(err)
		}
		level = level[:0]
		for id, vs := range m {
			out[id] = vs
			for _, u := range vs.Upstreams {
				if u.Repository.Kind == enum.KindVirtual {
					if _, seen := out[u.Repository.ID]; !seen {
						level = append(level, u.Repository.ID)
					}
				}
			}
		}
	}
	if out[repositoryID] == nil {
		return nil, errs.New(CodeNotFound, "virtual repository %s has no settings", repositoryID)
	}
	return out, nil
}

// virtualFamilySettings loads the settings of one format family's
// virtuals in one statement, the rules of each upstream aggregated in
// their creation order.
func virtualFamilySettings(ctx context.Context, q db.Queryer, vt virtualTables, namespaceID uuid.UUID, repos []uuid.UUID) (map[uuid.UUID]*VirtualSettings, error) {
	rows, err := q.Query(ctx, `SELECT v.id, v.repository_id, v.deploy_to_repository_id, v.reserved_patterns, v.settings_changed_at, r2.format,
			u.id, `+repositoryColumns+`, rl.types, rl.fields, rl.patterns
		FROM `+vt.virtual+` v
		JOIN repositories r2 ON r2.namespace_id = v.namespace_id AND r2.id = v.repository_id
		LEFT JOIN `+vt.upstreams+` u ON u.namespace_id = v.namespace_id AND u.`+vt.virtualFK+` = v.id
		LEFT JOIN repositories r ON r.namespace_id = u.namespace_id AND r.id = u.upstream_repository_id
		LEFT JOIN LATERAL (
			SELECT array_agg(x.rule_type ORDER BY x.id) AS types, array_agg(x.target_field ORDER BY x.id) AS fields,
			       array_agg(x.pattern ORDER BY x.id) AS patterns
			FROM `+vt.rules+` x WHERE x.namespace_id = $1 AND x.`+vt.upstreamFK+` = u.id) rl ON true
		WHERE v.namespace_id = $1 AND v.repository_id = ANY($2)
		ORDER BY v.repository_id, u.position`, namespaceID, repos)
	if err != nil {
		return nil, fmt.Errorf("load virtual settings: %w", err)
	}
	defer rows.Close()
	out := map[uuid.UUID]*VirtualSettings{}
	for rows.Next() {
		var (
			vs            VirtualSettings
			vformat       int16
			upID          *uuid.UUID
			r             Repository
			rid, rns      *uuid.UUID
			rname         *string
			rf, rk, rv    *int16
			ac, dc, sb    *int64
			createdAt     *time.Time
			types, fields []int16
			patterns      []string
		)
		if err := rows.Scan(&vs.ID, &vs.RepositoryID, &vs.DeployTo, &vs.ReservedPatterns, &vs.ChangedAt, &vformat,
			&upID, &rid, &rns, &rname, &r.Description, &rf, &rk, &rv, &ac, &dc, &sb, &r.LastUpdatedAt, &createdAt, &r.SoftDeletedAt,
			&types, &fields, &patterns); err != nil {
			return nil, fmt.Errorf("load virtual settings: %w", err)
		}
		cur := out[vs.RepositoryID]
		if cur == nil {
			vs.NamespaceID, vs.Format = namespaceID, enum.Format(vformat)
			cur = &vs
			out[vs.RepositoryID] = cur
		}
		if upID == nil || rid == nil {
			continue
		}
		r.ID, r.NamespaceID, r.Name = *rid, *rns, *rname
		r.Format, r.Kind, r.Visibility = enum.Format(*rf), enum.Kind(*rk), enum.Visibility(*rv)
		r.ArtifactsCount, r.DownloadsCount, r.SizeBytes, r.CreatedAt = *ac, *dc, *sb, *createdAt
		u := VirtualUpstream{ID: *upID, Position: len(cur.Upstreams) + 1, Repository: &r}
		for i := range types {
			u.Rules = append(u.Rules, VirtualRule{Type: enum.UpstreamRuleType(types[i]), Field: fields[i], Pattern: patterns[i]})
		}
		cur.Upstreams = append(cur.Upstreams, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load virtual settings: %w", err)
	}
	return out, nil
}

// virtualsListing names the virtual repositories (of any format) that
// list repository repoID as an upstream, trashed ones marked.
func virtualsListing(ctx context.Context, q db.Queryer, namespaceID, repoID uuid.UUID) ([]string, error) {
	var parts []string
	for _, vt := range allVirtualTables {
		parts = append(parts, `SELECT r.name, r.soft_deleted_at IS NOT NULL FROM `+vt.upstreams+` u
			JOIN `+vt.virtual+` v ON v.namespace_id = u.namespace_id AND v.id = u.`+vt.virtualFK+`
			JOIN repositories r ON r.namespace_id = v.namespace_id AND r.id = v.repository_id
			WHERE u.namespace_id = $1 AND u.upstream_repository_id = $2`)
	}
	rows, err := q.Query(ctx, strings.Join(parts, " UNION ALL ")+` ORDER BY 1`, namespaceID, repoID)
	if err != nil {
		return nil, fmt.Errorf("load virtual repositories listing %s: %w", repoID, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		var trashed bool
		if err := rows.Scan(&name, &trashed); err != nil {
			return nil, fmt.Errorf("load virtual repositories listing %s: %w", repoID, err)
		}
		if trashed {
			name += " (in the trash)"
		}
		out = append(out, name)
	}
	return out, rows.Err()
}

// VirtualsListing names the virtual repositories that list a repository
// as an upstream (what blocks its deletion).
func (s *Store) VirtualsListing(ctx context.Context, namespaceID, repoID uuid.UUID) ([]string, error) {
	return virtualsListing(ctx, s.pool, namespaceID, repoID)
}

// CodeVirtualUpstream: the repository is an upstream of virtual
// repositories, named in the message; it cannot be deleted until they no
// longer list it.
var CodeVirtualUpstream = Code{Name: "VIRTUAL_UPSTREAM", Kind: KindConflict}

func virtualUpstreamConflict(repo string, virtuals []string) error {
	return errs.New(CodeVirtualUpstream,
		"repository %s is an upstream of the virtual repositories %s: remove it from their upstream lists first",
		repo, strings.Join(virtuals, ", "))
}

// MatchVirtualPattern reports whether value matches a rule or reserved
// pattern: `*` matches any run of characters except `/`, `**` any run
// including `/`, `?` one character other than `/`; everything else
// matches itself. Matching is case-sensitive, over the whole value, in
// O(len(pattern) * len(value)) whatever the pattern (no backtracking).
func MatchVirtualPattern(pattern, value string) bool {
	const (
		tokRune = iota
		tokAny  // ?
		tokStar // *
		tokDeep // **
	)
	type token struct {
		kind int
		r    rune
	}
	var toks []token
	pr := []rune(pattern)
	for i := 0; i < len(pr); i++ {
		switch {
		case pr[i] == '*' && i+1 < len(pr) && pr[i+1] == '*':
			for i+1 < len(pr) && pr[i+1] == '*' {
				i++
			}
			toks = append(toks, token{kind: tokDeep})
		case pr[i] == '*':
			toks = append(toks, token{kind: tokStar})
		case pr[i] == '?':
			toks = append(toks, token{kind: tokAny})
		default:
			toks = append(toks, token{kind: tokRune, r: pr[i]})
		}
	}
	v := []rune(value)
	// cur[j]: the tokens so far match v[:j].
	cur := make([]bool, len(v)+1)
	next := make([]bool, len(v)+1)
	cur[0] = true
	for _, t := range toks {
		clear(next)
		for j := 0; j <= len(v); j++ {
			switch t.kind {
			case tokDeep:
				next[j] = cur[j] || (j > 0 && next[j-1])
			case tokStar:
				next[j] = cur[j] || (j > 0 && next[j-1] && v[j-1] != '/')
			case tokAny:
				next[j] = j > 0 && cur[j-1] && v[j-1] != '/'
			default:
				next[j] = j > 0 && cur[j-1] && v[j-1] == t.r
			}
		}
		cur, next = next, cur
	}
	return cur[len(v)]
}

// VirtualRulesAdmit tells whether an upstream's rules admit value for
// field: no deny rule of the field matches it and, when the field has
// allow rules, one of them does.
func VirtualRulesAdmit(rules []VirtualRule, field int16, value string) bool {
	allowed, hasAllow := false, false
	for _, r := range rules {
		if r.Field != field {
			continue
		}
		m := MatchVirtualPattern(r.Pattern, value)
		if r.Type == enum.UpstreamRuleDeny && m {
			return false
		}
		if r.Type == enum.UpstreamRuleAllow {
			hasAllow = true
			allowed = allowed || m
		}
	}
	return !hasAllow || allowed
}

// VirtualMember is a hosted or remote upstream reached while flattening a
// virtual repository: the rule sets on the way to it (each must admit a
// value) and the reserved patterns of every virtual on the way.
type VirtualMember struct {
	Repository *Repository
	Rules      [][]VirtualRule
	Reserved   []string
}

// Admits tells whether every rule set on the way to the member admits
// value for field.
func (m *VirtualMember) Admits(field int16, value string) bool {
	for _, rs := range m.Rules {
		if !VirtualRulesAdmit(rs, field, value) {
			return false
		}
	}
	return true
}

// ReservedName tells whether name matches a reserved pattern that applies
// to the member: such a name is never asked of a remote upstream.
func (m *VirtualMember) ReservedName(name string) bool {
	for _, p := range m.Reserved {
		if MatchVirtualPattern(p, name) {
			return true
		}
	}
	return false
}

// FlattenVirtual lists the hosted and remote upstreams of the virtual root
// in resolution order: a nested virtual's upstreams take its place, each
// repository is reached once (at its first place), trashed ones are
// skipped, and nesting stops at MaxVirtualDepth. tree is VirtualTree's.
func FlattenVirtual(tree map[uuid.UUID]*VirtualSettings, root uuid.UUID) []*VirtualMember {
	var out []*VirtualMember
	seen := map[uuid.UUID]bool{root: true}
	var walk func(id uuid.UUID, rules [][]VirtualRule, reserved []string, depth int)
	walk = func(id uuid.UUID, rules [][]VirtualRule, reserved []string, depth int) {
		vs := tree[id]
		if vs == nil || depth > MaxVirtualDepth {
			return
		}
		reserved = append(slices.Clip(reserved), vs.ReservedPatterns...)
		for _, u := range vs.Upstreams {
			if seen[u.Repository.ID] || u.Repository.SoftDeletedAt != nil {
				continue
			}
			seen[u.Repository.ID] = true
			r := slices.Clip(rules)
			if len(u.Rules) > 0 {
				r = append(r, u.Rules)
			}
			if u.Repository.Kind == enum.KindVirtual {
				walk(u.Repository.ID, r, reserved, depth+1)
				continue
			}
			out = append(out, &VirtualMember{Repository: u.Repository, Rules: r, Reserved: reserved})
		}
	}
	walk(root, nil, nil, 0)
	return out
}

// Refusal tells whether the rules on the way to the member refuse value
// of field and, when a DENY rule does, which one (nil: the value matched
// none of a rule set's ALLOW rules). It agrees with Admits.
func (m *VirtualMember) Refusal(field int16, value string) (rule *VirtualRule, refused bool) {
	for _, rs := range m.Rules {
		if VirtualRulesAdmit(rs, field, value) {
			continue
		}
		for i := range rs {
			r := &rs[i]
			if r.Field == field && r.Type == enum.UpstreamRuleDeny && MatchVirtualPattern(r.Pattern, value) {
				return r, true
			}
		}
		return nil, true
	}
	return nil, false
}

// VirtualValue is a value a member's rules must admit: the format's
// target field (enum.ContainerTargetField, ...) and the value of the
// request for it (an image name, a tag, a package name, a version ...).
type VirtualValue struct {
	Field int16
	Value string
}

// VirtualOutcome is what resolution decides for one member before any
// content is read from it.
type VirtualOutcome int

const (
	// VirtualCandidate: the member is asked, in order: a hosted member
	// that holds the name, or a remote member.
	VirtualCandidate VirtualOutcome = iota
	// VirtualAbsent: a hosted member that does not hold the name.
	VirtualAbsent
	// VirtualDenied: the rules on the way to the member refuse a value.
	VirtualDenied
	// VirtualShadowed: a remote member not asked because a hosted member
	// holds the name (whatever that member's rules): the name is internal.
	VirtualShadowed
	// VirtualReserved: a remote member not asked because the name matches
	// a reserved pattern of a virtual on the way to it.
	VirtualReserved
)

// VirtualDecision is the outcome of one member of a flattened virtual.
type VirtualDecision struct {
	Member  *VirtualMember
	Outcome VirtualOutcome
	// Refused is the value refused when Outcome is VirtualDenied, and
	// Rule the DENY rule that refused it (nil: it matched none of the
	// field's ALLOW rules).
	Refused *VirtualValue
	Rule    *VirtualRule
}

// DecideVirtual is the decision every format's virtual resolution makes,
// before it reads content: for each member of FlattenVirtual, in order,
// whether it is asked for name. holding is the set of hosted members
// that hold name (by repository id), whatever their rules; values are
// what the rules must admit (the name's field first; a version's field
// when the request names one). A member whose rules refuse a value is
// denied; a hosted member is a candidate when it holds the name; a
// remote one when no hosted member holds it and it is not reserved.
func DecideVirtual(members []*VirtualMember, holding map[uuid.UUID]bool, name string, values ...VirtualValue) []VirtualDecision {
	shadowed := false
	for _, m := range members {
		if m.Repository.Kind == enum.KindHosted && holding[m.Repository.ID] {
			shadowed = true
		}
	}
	out := make([]VirtualDecision, len(members))
	for i, m := range members {
		d := VirtualDecision{Member: m, Outcome: VirtualCandidate}
		for j := range values {
			if rule, refused := m.Refusal(values[j].Field, values[j].Value); refused {
				d.Outcome, d.Refused, d.Rule = VirtualDenied, &values[j], rule
				break
			}
		}
		if d.Outcome == VirtualCandidate {
			switch {
			case m.Repository.Kind == enum.KindHosted && !holding[m.Repository.ID]:
				d.Outcome = VirtualAbsent
			case m.Repository.Kind != enum.KindHosted && shadowed:
				d.Outcome = VirtualShadowed
			case m.Repository.Kind != enum.KindHosted && m.ReservedName(name):
				d.Outcome = VirtualReserved
			}
		}
		out[i] = d
	}
	return out
}

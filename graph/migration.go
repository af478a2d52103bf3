package graph

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/legacy"
)

// Helpers of migration.resolvers.go: the legacy inventory, progress and
// controls of the registry:2 migration (docs/registry2-migration.md).

const legacyCursorKind = "legacy"

func legacyStatusOf(s enum.LegacyStatus) model.LegacyMigrationStatus {
	return model.LegacyMigrationStatus(strings.ToUpper(s.String()))
}

func legacyStatusFrom(s model.LegacyMigrationStatus) (enum.LegacyStatus, error) {
	v, err := enum.ParseLegacyStatus(strings.ToLower(string(s)))
	if err != nil {
		return 0, invalidInput("unknown legacy migration status %q", s)
	}
	return v, nil
}

// toLegacyRepositories converts a page, resolving the target namespace
// slugs in one query.
func (r *Resolver) toLegacyRepositories(ctx context.Context, rows []*legacy.Repository) ([]*model.LegacyRepository, error) {
	ids := make([]uuid.UUID, 0, len(rows))
	seen := map[uuid.UUID]bool{}
	for _, row := range rows {
		if !seen[row.NamespaceID] {
			seen[row.NamespaceID] = true
			ids = append(ids, row.NamespaceID)
		}
	}
	slugs := map[uuid.UUID]string{}
	if len(ids) > 0 {
		nss, err := r.store.NamespacesByIDs(ctx, ids)
		if err != nil {
			return nil, err
		}
		for _, ns := range nss {
			slugs[ns.ID] = ns.Slug
		}
	}
	out := make([]*model.LegacyRepository, len(rows))
	for i, row := range rows {
		out[i] = toLegacyRepository(row, slugs[row.NamespaceID])
	}
	return out, nil
}

func toLegacyRepository(row *legacy.Repository, slug string) *model.LegacyRepository {
	return &model.LegacyRepository{
		ID: row.ID.String(), LegacyPath: row.LegacyPath,
		Target:   slug + "/" + row.RepositoryName + "/" + row.ImageName,
		TagCount: row.TagCount, Priority: row.Priority, Status: legacyStatusOf(row.Status),
		PreImportStartedAt: row.PreImportStartedAt, PreImportFinishedAt: row.PreImportFinishedAt,
		ImportStartedAt: row.ImportStartedAt, ImportFinishedAt: row.ImportFinishedAt,
		TimeLimitExceededAt: row.TimeLimitExceededAt, Attempts: row.Attempts, LastError: row.LastError,
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
	}
}

// legacyRepositoryResult converts the answer of a mutation on one row.
func (r *Resolver) legacyRepositoryResult(ctx context.Context, row *legacy.Repository, err error) (*model.LegacyRepository, error) {
	if err != nil {
		return nil, legacyError(err)
	}
	rows, err := r.toLegacyRepositories(ctx, []*legacy.Repository{row})
	if err != nil {
		return nil, err
	}
	return rows[0], nil
}

func legacyError(err error) error {
	switch {
	case store.HasCode(err, legacy.CodeRepositoryUnknown):
		return notFound("no legacy repository with that id")
	case store.HasCode(err, legacy.CodeState):
		return newError(CodeConflict, "the legacy repository's status does not allow this (a pass is running, or it is migrated, or it is not failed or skipped)")
	}
	return err
}

func (r *Resolver) legacyRepositories(ctx context.Context, status []model.LegacyMigrationStatus, first *int, after *string) (*model.LegacyRepositoryConnection, error) {
	if err := requireSuperUser(ctx); err != nil {
		return nil, err
	}
	n, err := pageSize(first)
	if err != nil {
		return nil, err
	}
	var f legacy.Filter
	for _, s := range status {
		v, err := legacyStatusFrom(s)
		if err != nil {
			return nil, err
		}
		f.Statuses = append(f.Statuses, v)
	}
	var key string
	hasPrev, err := decodeCursor(after, legacyCursorKind, &key)
	if err != nil {
		return nil, err
	}
	rows, more, err := r.legacy.ListRepositories(ctx, f, legacy.Page{After: key, Limit: n})
	if err != nil {
		return nil, err
	}
	nodes, err := r.toLegacyRepositories(ctx, rows)
	if err != nil {
		return nil, err
	}
	conn := &model.LegacyRepositoryConnection{Edges: make([]*model.LegacyRepositoryEdge, len(nodes)),
		PageInfo: &model.PageInfo{HasNextPage: more, HasPreviousPage: hasPrev}}
	for i, node := range nodes {
		conn.Edges[i] = &model.LegacyRepositoryEdge{Cursor: encodeCursor(legacyCursorKind, node.LegacyPath), Node: node}
	}
	if len(nodes) > 0 {
		conn.PageInfo.StartCursor = &conn.Edges[0].Cursor
		conn.PageInfo.EndCursor = &conn.Edges[len(nodes)-1].Cursor
	}
	return conn, nil
}

func (r *Resolver) legacyProgress(ctx context.Context) (*model.LegacyMigrationProgress, error) {
	if err := requireSuperUser(ctx); err != nil {
		return nil, err
	}
	p, err := r.legacy.MigrationProgress(ctx)
	if err != nil {
		return nil, err
	}
	c, err := r.legacy.Controls(ctx)
	if err != nil {
		return nil, err
	}
	out := &model.LegacyMigrationProgress{
		Total: p.Total, PercentDone: p.PercentDone(),
		MigratedLastHour: p.MigratedLastHour, MigratedLastDay: p.MigratedLastDay,
		RatePerHour: float64(p.MigratedLastDay) / 24,
		PreImport:   toPassDurations(p.PreImport), FinalImport: toPassDurations(p.Final),
		OverTimeLimit: p.OverTimeLimit, Paused: c.Paused,
	}
	// Repositories that tried pass 2: finished it, or ran over the limit.
	if tried := p.Final.Count + p.OverTimeLimit; tried > 0 {
		out.OverTimeLimitPercent = 100 * float64(p.OverTimeLimit) / float64(tried)
	}
	for _, s := range enum.LegacyStatusValues() {
		out.ByStatus = append(out.ByStatus, &model.LegacyStatusCount{Status: legacyStatusOf(s), Count: p.ByStatus[s]})
	}
	return out, nil
}

func toPassDurations(d legacy.Durations) *model.LegacyPassDurations {
	out := &model.LegacyPassDurations{Count: d.Count}
	if d.Count > 0 {
		secs := func(v time.Duration) *float64 { f := v.Seconds(); return &f }
		out.Min, out.Median, out.Max = secs(d.Min), secs(d.Median), secs(d.Max)
	}
	return out
}

func (r *Resolver) setLegacyPaused(ctx context.Context, paused bool) (*model.LegacyMigrationControls, error) {
	if err := requireSuperUser(ctx); err != nil {
		return nil, err
	}
	c, err := r.legacy.SetControls(ctx, legacy.ControlsUpdate{Paused: &paused, ChangedBy: "admin"})
	if err != nil {
		return nil, err
	}
	return toLegacyControls(c), nil
}

func (r *Resolver) legacyControls(ctx context.Context) (*model.LegacyMigrationControls, error) {
	if err := requireSuperUser(ctx); err != nil {
		return nil, err
	}
	c, err := r.legacy.Controls(ctx)
	if err != nil {
		return nil, err
	}
	return toLegacyControls(c), nil
}

// maxLegacyDuration bounds the durations an operator may set (30 days),
// far below time.Duration's range.
const maxLegacyDuration = 30 * 24 * time.Hour

// setLegacyControls validates every field before writing any, so a bad
// input changes nothing.
func (r *Resolver) setLegacyControls(ctx context.Context, in model.LegacyMigrationControlsInput) (*model.LegacyMigrationControls, error) {
	if err := requireSuperUser(ctx); err != nil {
		return nil, err
	}
	u := legacy.ControlsUpdate{Concurrency: in.Concurrency, ChangedBy: "admin"}
	if in.Concurrency != nil && (*in.Concurrency < 1 || *in.Concurrency > 64) {
		return nil, invalidInput("concurrency must be between 1 and 64, not %d", *in.Concurrency)
	}
	var err error
	if u.Cadence, err = legacySeconds("cadenceSeconds", in.CadenceSeconds, 0); err != nil {
		return nil, err
	}
	// The table keeps microseconds: less would store a zero limit.
	if u.FinalTimeLimit, err = legacySeconds("finalTimeLimitSeconds", in.FinalTimeLimitSeconds, time.Microsecond); err != nil {
		return nil, err
	}
	c, err := r.legacy.SetControls(ctx, u)
	if err != nil {
		return nil, err
	}
	return toLegacyControls(c), nil
}

// legacySeconds converts an optional number of seconds, refusing NaN,
// infinities and values outside min..maxLegacyDuration.
func legacySeconds(field string, secs *float64, min time.Duration) (*time.Duration, error) {
	if secs == nil {
		return nil, nil
	}
	s := *secs
	if math.IsNaN(s) || s < min.Seconds() || s > maxLegacyDuration.Seconds() {
		return nil, invalidInput("%s must be between %g and %g seconds, not %g", field, min.Seconds(), maxLegacyDuration.Seconds(), s)
	}
	d := time.Duration(s * float64(time.Second))
	return &d, nil
}

func toLegacyControls(c *legacy.Controls) *model.LegacyMigrationControls {
	return &model.LegacyMigrationControls{
		Paused: c.Paused, Concurrency: c.Concurrency, CadenceSeconds: c.Cadence.Seconds(),
		FinalTimeLimitSeconds: c.FinalTimeLimit.Seconds(), ChangedBy: c.ChangedBy, UpdatedAt: c.UpdatedAt,
	}
}

func (r *Resolver) legacyMutate(ctx context.Context, id string, fn func(uuid.UUID) (*legacy.Repository, error)) (*model.LegacyRepository, error) {
	if err := requireSuperUser(ctx); err != nil {
		return nil, err
	}
	uid, err := parseID("legacy repository", id)
	if err != nil {
		return nil, err
	}
	row, err := fn(uid)
	return r.legacyRepositoryResult(ctx, row, err)
}

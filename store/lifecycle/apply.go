package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/maven"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// NpmHook is the npm store's write hook.
type NpmHook = npmstore.WriteHook

// Item is one thing a policy deletes (or, in a preview, would delete).
type Item struct {
	Kind         Kind
	ID           uuid.UUID // manifest or version id (a build: its version's)
	RepositoryID uuid.UUID
	Repository   string
	Group        string   // image, npm package, Maven group:artifact
	Name         string   // digest, version, or timestamped build
	Tags         []string // container tags (nil: untagged)
	CreatedAt    time.Time
	SizeBytes    int64
	fileIDs      []uuid.UUID // a build's files
}

// errStop ends a walk early without error.
var errStop = errors.New("stop")

// walk evaluates a repository's candidates page by page and hands each
// page's deletions to fn, in stream order. Rows are read and the page
// closed before fn runs, so fn may write.
func (s *Store) walk(ctx context.Context, repo *store.Repository, ev *Evaluator, fn func([]Item) error) error {
	if kindOf(repo) == "" || !(ev.DeletesArtifacts() || (ev.PrunesSnapshotBuilds() && kindOf(repo) == KindMavenVersion)) {
		return nil
	}
	key := pageKey{createdAt: farFuture}
	for {
		rows, err := s.page(ctx, repo, key)
		if err != nil {
			return err
		}
		var items []Item
		for i := range rows {
			c := &rows[i]
			if ev.Delete(&c.Candidate) {
				items = append(items, itemOf(repo, c))
				continue
			}
			if kindOf(repo) == KindMavenVersion && ev.PrunesSnapshotBuilds() && mavenlayout.IsSnapshotVersion(c.Label) {
				builds, err := s.snapshotBuilds(ctx, repo, c, ev)
				if err != nil {
					return err
				}
				items = append(items, builds...)
			}
		}
		if len(items) > 0 {
			if err := fn(items); err != nil {
				if errors.Is(err, errStop) {
					return nil
				}
				return err
			}
		}
		if len(rows) < s.opts.PageSize {
			return nil
		}
		last := rows[len(rows)-1]
		key = pageKey{group: last.Group, createdAt: last.CreatedAt, id: last.ID}
	}
}

func itemOf(repo *store.Repository, c *row) Item {
	it := Item{Kind: kindOf(repo), ID: c.ID, RepositoryID: repo.ID, Repository: repo.Name, Group: c.GroupName,
		Name: c.Label, CreatedAt: c.CreatedAt, SizeBytes: c.SizeBytes}
	if it.Kind == KindContainerManifest {
		it.Tags = c.Names
	}
	return it
}

// snapshotBuilds lists the builds of a kept SNAPSHOT version that
// KEEP_SNAPSHOT_BUILDS drops.
func (s *Store) snapshotBuilds(ctx context.Context, repo *store.Repository, c *row, ev *Evaluator) ([]Item, error) {
	builds, err := maven.New(s.core).SnapshotBuildsOf(ctx, repo.NamespaceID, c.artifactID, c.ID, c.Label)
	if err != nil {
		return nil, err
	}
	in := make([]Build, len(builds))
	for i, b := range builds {
		in[i] = Build{BuiltAt: b.BuiltAt}
	}
	var out []Item
	for _, i := range ev.DeleteBuilds(in) {
		b := builds[i]
		out = append(out, Item{Kind: KindMavenSnapshotBuild, ID: c.ID, RepositoryID: repo.ID, Repository: repo.Name,
			Group: c.GroupName, Name: b.Value, CreatedAt: b.BuiltAt, SizeBytes: b.SizeBytes, fileIDs: b.FileIDs})
	}
	return out, nil
}

// Preview is a dry run: what a policy would delete now.
type Preview struct {
	Count     int
	SizeBytes int64
	Items     []Item // the requested window
	HasMore   bool
}

// PreviewScope evaluates the policy of a scope (draft, when not nil,
// instead of the stored one) without deleting anything: the totals over
// every repository the policy governs and the items from offset on (at
// most limit). A repository scope uses its effective policy (its
// override, else the namespace default); the namespace scope covers the
// repositories without an override.
func (s *Store) PreviewScope(ctx context.Context, sc Scope, draft *Input, offset, limit int) (*Preview, error) {
	if draft != nil {
		if err := Validate(*draft); err != nil {
			return nil, err
		}
	}
	now := s.core.Options().Clock.Now()
	out := &Preview{}
	n := 0
	collect := func(items []Item) error {
		for _, it := range items {
			out.Count++
			out.SizeBytes += it.SizeBytes
			switch {
			case n >= offset && len(out.Items) < limit:
				out.Items = append(out.Items, it)
			case n >= offset:
				out.HasMore = true
			}
			n++
		}
		return nil
	}
	err := s.eachGoverned(ctx, sc, draft, func(repo *store.Repository, p *Policy) error {
		return s.walk(ctx, repo, NewEvaluator(p, now), collect)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachGoverned calls fn with each hosted repository of a scope and the
// policy that governs it (draft replaces the scope's own policy).
func (s *Store) eachGoverned(ctx context.Context, sc Scope, draft *Input, fn func(*store.Repository, *Policy) error) error {
	asPolicy := func(p *Policy) *Policy {
		if draft == nil {
			return p
		}
		return &Policy{NamespaceID: sc.NamespaceID, Enabled: draft.Enabled, MinAgeDays: draft.MinAgeDays, Rules: draft.Rules}
	}
	if sc.Repository != nil {
		if sc.Repository.Kind != enum.KindHosted {
			return nil
		}
		p, err := s.Effective(ctx, sc.Repository)
		if err != nil {
			return err
		}
		return fn(sc.Repository, asPolicy(p))
	}
	def, err := s.Get(ctx, sc)
	if err != nil {
		return err
	}
	p := asPolicy(def)
	return s.eachHostedRepository(ctx, sc.NamespaceID, true, func(repo *store.Repository) error { return fn(repo, p) })
}

// eachHostedRepository pages through a namespace's active hosted
// repositories (only those without an override when defaultOnly).
func (s *Store) eachHostedRepository(ctx context.Context, nsID uuid.UUID, defaultOnly bool, fn func(*store.Repository) error) error {
	filter := ""
	if defaultOnly {
		filter = `
		  AND NOT EXISTS (SELECT 1 FROM container_repository_lifecycle_policy_settings o WHERE o.namespace_id = $1 AND o.repository_id = r.id)
		  AND NOT EXISTS (SELECT 1 FROM npm_repository_lifecycle_policy_settings o WHERE o.namespace_id = $1 AND o.repository_id = r.id)
		  AND NOT EXISTS (SELECT 1 FROM maven_repository_lifecycle_policy_settings o WHERE o.namespace_id = $1 AND o.repository_id = r.id)`
	}
	after := uuid.Nil
	for {
		rows, err := s.pool.Query(ctx, `
			SELECT r.id, r.namespace_id, r.name, r.format, r.kind FROM repositories r
			WHERE r.namespace_id = $1 AND r.soft_deleted_at IS NULL AND r.kind = $2 AND r.id > $3`+filter+`
			ORDER BY r.id LIMIT 500`, nsID, enum.KindHosted, after)
		if err != nil {
			return fmt.Errorf("lifecycle: repositories: %w", err)
		}
		repos, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.Repository, error) {
			var repo store.Repository
			return &repo, r.Scan(&repo.ID, &repo.NamespaceID, &repo.Name, &repo.Format, &repo.Kind)
		})
		if err != nil {
			return fmt.Errorf("lifecycle: repositories: %w", err)
		}
		for _, repo := range repos {
			if err := fn(repo); err != nil {
				return err
			}
		}
		if len(repos) < 500 {
			return nil
		}
		after = repos[len(repos)-1].ID
	}
}

// RunResult sums what a run deleted.
type RunResult struct {
	Deleted map[Kind]int
	Skipped int // items another writer changed first (already deleted, now referenced)
}

// Total is the number of items deleted.
func (r RunResult) Total() int {
	n := 0
	for _, v := range r.Deleted {
		n += v
	}
	return n
}

// maxContainerPasses bounds the container passes of a run: deleting an
// index makes the children it alone listed top-level (and untagged), so
// the next pass deletes them too; nesting is at most an index of indexes.
const maxContainerPasses = 3

// RunScope applies the effective policy of a scope's repositories now:
// each item the evaluation deletes goes through its format's own
// soft-delete path (to the trash, restorable), with the policy recorded as
// the deleter. At most MaxDeletesPerRun items per repository.
func (s *Store) RunScope(ctx context.Context, sc Scope) (RunResult, error) {
	res := RunResult{Deleted: map[Kind]int{}}
	err := s.eachGoverned(ctx, sc, nil, func(repo *store.Repository, p *Policy) error {
		return s.runRepository(ctx, sc.NamespaceSlug, repo, p, &res)
	})
	return res, err
}

// RunNamespace applies every repository's effective policy in a namespace.
func (s *Store) RunNamespace(ctx context.Context, ns *store.Namespace) (RunResult, error) {
	res := RunResult{Deleted: map[Kind]int{}}
	if ns.RequireWrites() != nil {
		return res, nil
	}
	def, err := s.Get(ctx, Scope{NamespaceID: ns.ID})
	if err != nil {
		return res, err
	}
	err = s.eachHostedRepository(ctx, ns.ID, false, func(repo *store.Repository) error {
		p, err := s.Get(ctx, Scope{NamespaceID: ns.ID, Repository: repo})
		if err != nil {
			return err
		}
		if p == nil {
			p = def
		}
		return s.runRepository(ctx, ns.Slug, repo, p, &res)
	})
	return res, err
}

func (s *Store) runRepository(ctx context.Context, nsSlug string, repo *store.Repository, p *Policy, res *RunResult) error {
	if p == nil || !p.Enabled {
		return nil
	}
	ctx = store.WithActor(ctx, "policy:"+p.ID.String())
	budget := s.opts.MaxDeletesPerRun
	passes := 1
	if repo.IsContainer() {
		passes = maxContainerPasses
	}
	for range passes {
		deleted := 0
		err := s.walk(ctx, repo, NewEvaluator(p, s.core.Options().Clock.Now()), func(items []Item) error {
			for _, it := range items {
				if budget == 0 {
					return errStop
				}
				ok, err := s.deleteItem(ctx, nsSlug, repo, it)
				if err != nil {
					return err
				}
				if ok {
					res.Deleted[it.Kind]++
					deleted++
					budget--
				} else {
					res.Skipped++
				}
			}
			return nil
		})
		if err != nil || deleted == 0 || budget == 0 {
			return err
		}
	}
	return nil
}

// deleteItem soft-deletes one item through its format's path. An item
// another writer changed meanwhile (deleted, or now listed by an index)
// is skipped (false), not an error.
func (s *Store) deleteItem(ctx context.Context, nsSlug string, repo *store.Repository, it Item) (bool, error) {
	var err error
	switch it.Kind {
	case KindContainerManifest:
		_, err = container.New(s.core).DeleteManifest(ctx, container.ImageRef{Namespace: nsSlug, Repository: repo.Name, Image: it.Group}, it.Name)
	case KindNpmVersion:
		err = npmstore.New(s.core).DeleteVersionByID(ctx, repo.NamespaceID, it.ID, s.opts.NpmHook)
	case KindMavenVersion:
		_, err = maven.New(s.core).SoftDeleteVersion(ctx, repo.NamespaceID, it.ID)
	case KindMavenSnapshotBuild:
		var n int
		n, err = maven.New(s.core).SoftDeleteSnapshotBuilds(ctx, repo.NamespaceID, it.ID, it.fileIDs)
		if err == nil && n == 0 {
			return false, nil
		}
	}
	switch {
	case err == nil:
		return true, nil
	case store.KindOf(err) == store.KindNotFound || store.KindOf(err) == store.KindConflict:
		return false, nil
	}
	return false, fmt.Errorf("lifecycle: delete %s %s of %s: %w", it.Kind, it.Name, repo.Name, err)
}

// NamespacesWithEnabledPolicies pages through the namespaces having an
// enabled default or override, in id order.
func (s *Store) NamespacesWithEnabledPolicies(ctx context.Context, after uuid.UUID, limit int) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT namespace_id FROM (
		  SELECT namespace_id FROM lifecycle_policy_settings WHERE enabled
		  UNION SELECT namespace_id FROM container_repository_lifecycle_policy_settings WHERE enabled
		  UNION SELECT namespace_id FROM npm_repository_lifecycle_policy_settings WHERE enabled
		  UNION SELECT namespace_id FROM maven_repository_lifecycle_policy_settings WHERE enabled) n
		WHERE namespace_id > $1 ORDER BY namespace_id LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("lifecycle: namespaces with policies: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("lifecycle: namespaces with policies: %w", err)
	}
	return ids, nil
}

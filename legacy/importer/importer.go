// Package importer moves one repository of a legacy registry:2 into ours,
// in the two passes of docs/registry2-migration.md:
//
//   - PreImport (pass 1, no read-only window): every manifest a tag reaches
//     (index children included), its config and layers, copied into our
//     storage through the normal blob protocol (upload session, commit,
//     attachment) and stored as untagged manifests. Idempotent and
//     resumable: what is already in the image is not copied again.
//   - FinalImport (pass 2, status importing = the read-only window): the
//     same for what is new since pass 1, then every tag in one transaction
//     that also detaches the pass-1 manifests whose tags disappeared and
//     marks the repository migrated. Over the deadline nothing is
//     committed and the repository returns to pre_imported.
//
// Only tagged images migrate. Broken input is decided item by item (see
// Decision) and every decision is in the Report.
package importer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gocloud.dev/blob"

	"github.com/artifact-registry/artifact-registry/legacy/layout"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/legacy"
)

// Decision is what the importer did with a broken or unusual item.
type Decision string

const (
	// SkipItem: the item (a tag, an upload, an untagged manifest, a foreign
	// layer) is left behind; everything else imports.
	SkipItem Decision = "skip-item"
	// SkipManifest: the manifest, the indexes listing it and the tags on
	// them are left behind; the rest of the repository imports.
	SkipManifest Decision = "skip-manifest"
	// FailRepository: nothing of the pass is kept as migrated; the
	// repository is marked failed (pass 1) or stays served by the legacy
	// registry (pass 2).
	FailRepository Decision = "fail-repository"
)

// Item is one decision of a pass.
type Item struct {
	Kind     string // tag, manifest, blob, upload
	Ref      string // tag name, digest or upload id
	Decision Decision
	Reason   string
}

func (i Item) String() string {
	return fmt.Sprintf("%s %s: %s (%s)", i.Kind, i.Ref, i.Decision, i.Reason)
}

// Report is what a pass did for one repository.
type Report struct {
	LegacyPath string
	Pass       legacy.Pass
	// Skipped: the pass did not run (pre-imported recently).
	Skipped    bool
	SkipReason string

	TagsSeen          int
	TagsImported      int
	ManifestsImported int // stored by this pass
	ManifestsPresent  int // already in the image
	BlobsCopied       int
	BlobsPresent      int
	BytesCopied       int64
	Items             []Item
	Final             *legacy.FinalResult
	Duration          time.Duration
}

func (r *Report) add(kind, ref string, d Decision, format string, args ...any) {
	r.Items = append(r.Items, Item{Kind: kind, Ref: ref, Decision: d, Reason: fmt.Sprintf(format, args...)})
}

// Decisions returns the items with decision d.
func (r *Report) Decisions(d Decision) []Item {
	var out []Item
	for _, it := range r.Items {
		if it.Decision == d {
			out = append(out, it)
		}
	}
	return out
}

// summary is the report's skipped items in one line (the row's last_error).
func (r *Report) summary() string {
	if len(r.Items) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d item(s) left behind:", len(r.Items))
	for i, it := range r.Items {
		if i == 10 {
			fmt.Fprintf(&b, " …")
			break
		}
		fmt.Fprintf(&b, " [%s]", it)
	}
	return b.String()
}

// ErrTimeLimit: the final pass ran over its deadline and changed nothing.
var ErrTimeLimit = errors.New("importer: final pass exceeded its time limit")

// ErrNothingImportable: the legacy repository has tags but none of them can
// be imported (decision fail-repository).
var ErrNothingImportable = errors.New("importer: no tag of the repository can be imported")

// ErrRepositoryMissing: the legacy tree has no such repository (wrong
// storage URL, or deleted since the inventory): the pass fails rather than
// migrating an empty repository.
var ErrRepositoryMissing = errors.New("importer: repository not found in the legacy tree")

// Options tune a pass.
type Options struct {
	// Lease of a pass started here (not claimed by the service). Pass 1
	// default legacy.PreImportLease; pass 2 uses its deadline.
	Lease time.Duration
	// SkipRecent: a pass 1 is not run when the last one finished less than
	// this ago (default: the controls' pre_import_skip_recent).
	SkipRecent *time.Duration
}

// PreImport runs pass 1 for a repository. repo is either already claimed
// (status pre_importing, by ClaimNextLegacyRepository) or is started here.
// It returns the report and, when the pass failed, the error (the row is
// then failed, with the error as last_error).
func PreImport(ctx context.Context, st *store.Store, src *blob.Bucket, repo legacy.Repository) (*Report, error) {
	return PreImportWith(ctx, st, src, repo, Options{})
}

// PreImportWith is PreImport with options.
func PreImportWith(ctx context.Context, st *store.Store, src *blob.Bucket, repo legacy.Repository, o Options) (*Report, error) {
	s := storesOf(st)
	start := time.Now()
	rep := &Report{LegacyPath: repo.LegacyPath, Pass: legacy.PassPre}
	if repo.Status != enum.LegacyPreImporting {
		r, err := startPass(ctx, s, repo, legacy.PassPre, o)
		if store.HasCode(err, legacy.CodePreImportedRecently) {
			rep.Skipped, rep.SkipReason = true, err.Error()
			return rep, nil
		}
		if err != nil {
			return rep, err
		}
		repo = *r
	}
	err := runPre(ctx, s, layout.New(src), &repo, rep)
	rep.Duration = time.Since(start)
	if err != nil {
		rep.add("repository", repo.LegacyPath, FailRepository, "%v", err)
		if ferr := s.legacy.FailPass(context.WithoutCancel(ctx), repo.ID, legacy.PassPre, err); ferr != nil {
			return rep, errors.Join(err, ferr)
		}
		return rep, err
	}
	// Everything is copied: the bookkeeping is not abandoned on a late
	// cancellation (that would leave a finished pass looking failed).
	if err := s.legacy.FinishPreImport(context.WithoutCancel(ctx), repo.ID, rep.TagsSeen, rep.summary()); err != nil {
		return rep, err
	}
	return rep, nil
}

// stores are the store packages an import writes through, built once per
// pass.
type stores struct {
	legacy    *legacy.Store
	container *container.Store
}

func storesOf(st *store.Store) stores {
	return stores{legacy: legacy.New(st), container: container.New(st)}
}

func startPass(ctx context.Context, s stores, repo legacy.Repository, pass legacy.Pass, o Options) (*legacy.Repository, error) {
	lease := o.Lease
	if lease <= 0 {
		lease = legacy.PreImportLease
	}
	skip := time.Duration(0)
	if pass == legacy.PassPre {
		if o.SkipRecent != nil {
			skip = *o.SkipRecent
		} else {
			c, err := s.legacy.Controls(ctx)
			if err != nil {
				return nil, err
			}
			skip = c.PreImportSkipRecent
		}
	}
	return s.legacy.StartPass(ctx, repo.ID, pass, lease, skip)
}

func runPre(ctx context.Context, s stores, tree *layout.Tree, repo *legacy.Repository, rep *Report) error {
	target, err := s.legacy.EnsureTarget(ctx, repo)
	if err != nil {
		return err
	}
	p, err := plan(ctx, tree, repo.LegacyPath, rep)
	if err != nil {
		return err
	}
	if err := p.reportLeftBehind(ctx, tree, repo.LegacyPath, rep); err != nil {
		return err
	}
	if _, err := p.execute(ctx, s, repo, tree, target, rep); err != nil {
		return err
	}
	return nil
}

// FinalImport runs pass 2 for a repository. repo is either already claimed
// (status importing) or is started here (it must be pre_imported). The
// whole pass, its transaction included, must end before deadline; past it
// the repository goes back to pre_imported with time_limit_exceeded_at set,
// nothing of the pass visible (ErrTimeLimit).
func FinalImport(ctx context.Context, st *store.Store, src *blob.Bucket, repo legacy.Repository, deadline time.Time) (*Report, error) {
	s := storesOf(st)
	start := time.Now()
	rep := &Report{LegacyPath: repo.LegacyPath, Pass: legacy.PassFinal}
	if repo.Status != enum.LegacyImporting {
		r, err := startPass(ctx, s, repo, legacy.PassFinal, Options{Lease: time.Until(deadline)})
		if err != nil {
			return rep, err
		}
		repo = *r
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	err := runFinal(dctx, s, layout.New(src), &repo, rep)
	rep.Duration = time.Since(start)
	if err == nil {
		return rep, nil
	}
	bg := context.WithoutCancel(ctx)
	if dctx.Err() != nil && ctx.Err() == nil {
		err = fmt.Errorf("%w (%s after %v): %v", ErrTimeLimit, repo.LegacyPath, rep.Duration.Round(time.Millisecond), err)
		rep.add("repository", repo.LegacyPath, FailRepository, "%v", err)
		if aerr := s.legacy.AbortFinal(bg, repo.ID, err.Error()); aerr != nil {
			return rep, errors.Join(err, aerr)
		}
		return rep, err
	}
	rep.add("repository", repo.LegacyPath, FailRepository, "%v", err)
	if ferr := s.legacy.FailPass(bg, repo.ID, legacy.PassFinal, err); ferr != nil {
		return rep, errors.Join(err, ferr)
	}
	return rep, err
}

func runFinal(ctx context.Context, s stores, tree *layout.Tree, repo *legacy.Repository, rep *Report) error {
	target, err := s.legacy.EnsureTarget(ctx, repo)
	if err != nil {
		return err
	}
	p, err := plan(ctx, tree, repo.LegacyPath, rep)
	if err != nil {
		return err
	}
	fin, err := p.execute(ctx, s, repo, tree, target, rep)
	if err != nil {
		return err
	}
	res, err := s.legacy.CompleteImport(ctx, *fin)
	if err != nil {
		return err
	}
	rep.Final = res
	return nil
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:// legacy trees
	_ "gocloud.dev/blob/s3blob"   // s3:// legacy trees

	"github.com/artifact-registry/artifact-registry/internal/config"
	"github.com/artifact-registry/artifact-registry/legacy/importer"
	"github.com/artifact-registry/artifact-registry/legacy/inventory"
	"github.com/artifact-registry/artifact-registry/legacy/mapping"
	"github.com/artifact-registry/artifact-registry/migrations"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/legacy"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

const importUsage = `usage: artifact-registry import <action> [flags]

actions:
  inventory --from <storage URL> --mapping <file>
                 record every repository of a registry:2 tree (file://, s3://)
  pre   --from <storage URL> (--repository <legacy path> | --all)
                 pass 1: copy tagged manifests and blobs, no tags, no read-only window
  final --from <storage URL> (--repository <legacy path> | --all) [--time-limit d]
                 pass 2: the rest and every tag, in the read-only window
  status         migration progress
`

// importCmd is the shared state of the import actions.
type importCmd struct {
	cfg        config.Config
	from       string
	mappingF   string
	repository string
	all        bool
	timeLimit  time.Duration
	out        io.Writer
}

func runImport(ctx context.Context, args []string) error {
	if len(args) < 1 {
		fmt.Fprint(os.Stderr, importUsage)
		return errors.New("import needs an action")
	}
	action := args[0]
	c := &importCmd{out: os.Stdout}
	fs := flag.NewFlagSet("import "+action, flag.ContinueOnError)
	c.cfg.Register(fs)
	fs.StringVar(&c.from, "from", os.Getenv("ARTIFACT_REGISTRY_LEGACY_STORAGE_URL"), "storage URL of the legacy registry's root directory (file://, s3://); env ARTIFACT_REGISTRY_LEGACY_STORAGE_URL")
	fs.StringVar(&c.mappingF, "mapping", "", "mapping rules file (YAML or JSON); inventory only")
	fs.StringVar(&c.repository, "repository", "", "legacy repository path (pre, final)")
	fs.BoolVar(&c.all, "all", false, "every repository ready for the pass, by priority (pre, final)")
	fs.DurationVar(&c.timeLimit, "time-limit", 0, "hard limit of one final pass (default: the migration controls' final_time_limit)")
	fs.Usage = func() { fmt.Fprint(fs.Output(), importUsage); fs.PrintDefaults() }
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if err := c.cfg.Finish(); err != nil {
		return err
	}
	switch action {
	case "inventory", "pre", "final", "status":
	default:
		fs.Usage()
		return fmt.Errorf("unknown import action %q", action)
	}
	if action != "status" && c.from == "" {
		return errors.New("--from <storage URL> is required")
	}
	if (action == "pre" || action == "final") && (c.repository == "") == !c.all {
		return errors.New("give exactly one of --repository <legacy path> and --all")
	}
	if action == "inventory" && c.mappingF == "" {
		return errors.New("--mapping <file> is required")
	}
	return c.run(ctx, action)
}

func (c *importCmd) run(ctx context.Context, action string) error {
	log := c.cfg.Logger()
	db, err := openDatabase(ctx, &c.cfg, log, roleCommand)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	if !c.cfg.NoMigrate {
		if err := migrations.Up(ctx, db.Pool); err != nil {
			return err
		}
	}
	objects, err := objstore.Open(ctx, c.cfg.StorageURL)
	if err != nil {
		return fmt.Errorf("open object storage: %w", err)
	}
	defer objects.Close()
	st := store.New(db.Pool, objects, store.Options{ReviewDelay: c.cfg.GCReviewDelay, MaxUploadSessionsPerRepository: c.cfg.MaxUploadSessionsPerRepository})
	if action == "status" {
		return c.status(ctx, st)
	}
	src, err := blob.OpenBucket(ctx, c.from)
	if err != nil {
		return fmt.Errorf("open legacy storage: %w", err)
	}
	defer src.Close()
	switch action {
	case "inventory":
		return c.inventory(ctx, st, src)
	case "pre":
		return c.pass(ctx, st, src, legacy.PassPre)
	default:
		return c.pass(ctx, st, src, legacy.PassFinal)
	}
}

func (c *importCmd) inventory(ctx context.Context, st *store.Store, src *blob.Bucket) error {
	rules, err := mapping.Load(c.mappingF)
	if err != nil {
		return err
	}
	res, err := inventory.Run(ctx, st, src, rules)
	if err != nil {
		return err
	}
	for _, r := range res.Recorded {
		fmt.Fprintf(c.out, "recorded %s -> %s/%s tags=%d status=%s\n", r.LegacyPath, r.RepositoryName, r.ImageName, r.TagCount, r.Status)
	}
	for _, u := range res.Unmapped {
		fmt.Fprintf(c.out, "unmapped %s: %s\n", u.Path, u.Reason)
	}
	fmt.Fprintf(c.out, "%d repositories found, %d recorded, %d unmapped\n", len(res.Found), len(res.Recorded), len(res.Unmapped))
	return nil
}

func (c *importCmd) pass(ctx context.Context, st *store.Store, src *blob.Bucket, pass legacy.Pass) error {
	controls, err := legacy.New(st).Controls(ctx)
	if err != nil {
		return err
	}
	limit := controls.FinalTimeLimit
	if c.timeLimit > 0 {
		limit = c.timeLimit
	}
	one := func(repo *legacy.Repository) error {
		var (
			rep *importer.Report
			err error
		)
		if pass == legacy.PassPre {
			rep, err = importer.PreImport(ctx, st, src, *repo)
		} else {
			rep, err = importer.FinalImport(ctx, st, src, *repo, time.Now().Add(limit))
		}
		c.printReport(rep, err)
		return err
	}
	if !c.all {
		repo, err := legacy.New(st).RepositoryByPath(ctx, c.repository)
		if err != nil {
			return err
		}
		return one(repo)
	}
	var failed int
	for ctx.Err() == nil {
		lease := legacy.PreImportLease
		if pass == legacy.PassFinal {
			lease = limit
		}
		repo, err := legacy.New(st).ClaimNextRepositoryWithLease(ctx, pass, lease)
		if store.HasCode(err, legacy.CodeNoWork) {
			break
		}
		if err != nil {
			return err
		}
		if one(repo) != nil {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d repositories failed the %s pass", failed, pass)
	}
	return ctx.Err()
}

func (c *importCmd) printReport(rep *importer.Report, err error) {
	if rep.Skipped {
		fmt.Fprintf(c.out, "%s: skipped: %s\n", rep.LegacyPath, rep.SkipReason)
		return
	}
	state := "ok"
	if err != nil {
		state = "FAILED: " + err.Error()
	}
	fmt.Fprintf(c.out, "%s: pass %s %s in %v: tags %d/%d, manifests %d new %d present, blobs %d copied (%d bytes) %d present\n",
		rep.LegacyPath, rep.Pass, state, rep.Duration.Round(time.Millisecond), rep.TagsImported, rep.TagsSeen,
		rep.ManifestsImported, rep.ManifestsPresent, rep.BlobsCopied, rep.BytesCopied, rep.BlobsPresent)
	for _, it := range rep.Items {
		fmt.Fprintf(c.out, "  %s\n", it)
	}
}

func (c *importCmd) status(ctx context.Context, st *store.Store) error {
	p, err := legacy.New(st).MigrationProgress(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "total %d, %.1f%% migrated, %d over the time limit, %d migrated in the last hour\n",
		p.Total, p.PercentDone(), p.OverTimeLimit, p.MigratedLastHour)
	for _, s := range enum.LegacyStatusValues() {
		fmt.Fprintf(c.out, "  %-14s %d\n", s, p.ByStatus[s])
	}
	fmt.Fprintf(c.out, "pass 1: %d done, min %v median %v max %v\n", p.PreImport.Count, p.PreImport.Min, p.PreImport.Median, p.PreImport.Max)
	fmt.Fprintf(c.out, "pass 2: %d done, min %v median %v max %v\n", p.Final.Count, p.Final.Min, p.Final.Median, p.Final.Max)
	return nil
}

package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/artifact-registry/artifact-registry/internal/config"
	"github.com/artifact-registry/artifact-registry/migrations"
)

func runMigrate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	var cfg config.Config
	cfg.Register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: artifact-registry migrate [flags] up|status")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cfg.Finish(); err != nil {
		return err
	}
	action := fs.Arg(0)
	if action != "up" && action != "status" {
		fs.Usage()
		return fmt.Errorf("migrate needs up or status, got %q", action)
	}
	log := cfg.Logger()
	db, err := openDatabase(ctx, &cfg, log, roleCommand)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	if action == "up" {
		if err := migrations.Up(ctx, db.Pool); err != nil {
			return err
		}
		log.Info("migrations applied")
	}
	st, err := migrations.Check(ctx, db.Pool)
	if err != nil {
		return err
	}
	fmt.Printf("applied: %d, pending: %d %v, river pending: %d\n", len(st.Applied), len(st.Pending), st.Pending, st.RiverPending)
	return nil
}

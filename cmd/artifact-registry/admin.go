package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/config"
	"github.com/artifact-registry/artifact-registry/migrations"
	"github.com/artifact-registry/artifact-registry/store"
)

const adminUsage = `usage: artifact-registry admin signing-key rotate [flags]

  signing-key rotate   make a new random key sign the OCI bearer tokens of
                       every instance; tokens signed with the previous key
                       stay valid until they expire
`

// runAdmin runs the operator commands that act on the shared database.
func runAdmin(ctx context.Context, args []string) error {
	if len(args) < 2 || args[0] != "signing-key" || args[1] != "rotate" {
		fmt.Print(adminUsage)
		return fmt.Errorf("admin: unknown command %q", args)
	}
	fs := flag.NewFlagSet("admin signing-key rotate", flag.ContinueOnError)
	var cfg config.Config
	cfg.Register(fs)
	if err := fs.Parse(args[2:]); err != nil {
		return err
	}
	if err := cfg.Finish(); err != nil {
		return err
	}
	db, err := openDatabase(ctx, &cfg, cfg.Logger(), roleCommand)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	if st, err := migrations.Check(ctx, db.Pool); err != nil {
		return err
	} else if !st.Current() {
		return fmt.Errorf("database migrations pending %v: run artifact-registry migrate up first", st.Pending)
	}
	// Rotation touches only the database: no object storage is opened.
	kid, err := auth.RotateSigningKey(ctx, store.New(db.Pool, nil, store.Options{}))
	if err != nil {
		return err
	}
	fmt.Printf("signing key %s is current: every instance signs with it within %s; tokens of the previous key stay valid until they expire, and keys retired over %s ago were deleted\n",
		kid, auth.KeyRefresh, auth.SigningKeyRetention.Round(time.Second))
	return nil
}

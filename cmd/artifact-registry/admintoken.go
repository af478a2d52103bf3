package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/admintoken"
	"github.com/artifact-registry/artifact-registry/internal/config"
	"github.com/artifact-registry/artifact-registry/internal/redact"
)

const adminTokenUsage = `usage: artifact-registry admin-token [--rotate] [--data-dir DIR]

Prints the admin token that serve generated under the data directory (the
embedded default without --admin-token), creating it if there is none yet.
--rotate replaces it; a running server accepts only the new one within a
second, and browser sessions signed in with the old one end.
`

// runAdminToken prints or rotates the generated admin token.
func runAdminToken(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("admin-token", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), adminTokenUsage); fs.PrintDefaults() }
	var cfg config.Config
	cfg.Register(fs)
	rotate := fs.Bool("rotate", false, "replace the token with a new random one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cfg.Finish(); err != nil {
		return err
	}
	if cfg.AdminToken != "" || cfg.DatabaseURL != "" {
		return fmt.Errorf("admin-token: this registry takes its admin token from --admin-token (ARTIFACT_REGISTRY_ADMIN_TOKEN); a token is generated only for the embedded default, without --database-url and --admin-token")
	}
	var token string
	var err error
	if *rotate {
		token, err = admintoken.Rotate(cfg.DataDir)
	} else {
		token, _, err = admintoken.LoadOrCreate(cfg.DataDir)
	}
	if err != nil {
		return err
	}
	fmt.Println(token)
	return nil
}

// adminTokenOptions sets the admin token of the authenticator: the
// configured one, else (embedded default only) the generated one under
// the data directory, created on first start. The token itself is never
// logged, only where to find it.
func adminTokenOptions(cfg *config.Config, log *slog.Logger, opts *auth.Options) error {
	switch {
	case cfg.AdminToken != "":
		opts.AdminToken = cfg.AdminToken
		return nil
	case cfg.DatabaseURL != "":
		log.Warn("no admin token configured: the management API accepts namespace tokens only; set --admin-token (ARTIFACT_REGISTRY_ADMIN_TOKEN) on every instance")
		return nil
	}
	token, created, err := admintoken.LoadOrCreate(cfg.DataDir)
	if err != nil {
		return err
	}
	redact.Secret(token)
	path := admintoken.Path(cfg.DataDir)
	if created {
		log.Info("generated an admin token: print it with `artifact-registry admin-token`", "file", path)
	} else {
		log.Debug("admin token read from the data directory", "file", path)
	}
	f, err := admintoken.Follow(path)
	if err != nil {
		return err
	}
	opts.AdminTokenFunc = f.Current
	return nil
}

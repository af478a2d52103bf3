package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/config"
	"github.com/artifact-registry/artifact-registry/keyrotation"
	"github.com/artifact-registry/artifact-registry/migrations"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/credentials"
)

const adminUsage = `usage: artifact-registry admin <command> [flags]

  signing-key rotate   make a new random key sign the OCI bearer tokens of
                       every instance; tokens signed with the previous key
                       stay valid until they expire
  root-key status      count the namespace keys wrapped under each root key
  root-key rotate      rewrap every namespace key with the root key of
                       --root-key-url (the old ones in --previous-root-key-urls);
                       a job of the running servers does it
  namespace-key status --namespace SLUG
                       list the namespace's key versions and the
                       credentials each still wraps
  namespace-key rotate --namespace SLUG
                       make a new key of the namespace active; a job of the
                       running servers rewraps its credentials
`

// runAdmin runs the operator commands that act on the shared database.
func runAdmin(ctx context.Context, args []string) error {
	if len(args) < 2 {
		fmt.Print(adminUsage)
		return fmt.Errorf("admin: unknown command %q", args)
	}
	cmd := args[0] + " " + args[1]
	switch cmd {
	case "signing-key rotate", "root-key status", "root-key rotate", "namespace-key status", "namespace-key rotate":
	default:
		fmt.Print(adminUsage)
		return fmt.Errorf("admin: unknown command %q", args)
	}
	fs := flag.NewFlagSet("admin "+cmd, flag.ContinueOnError)
	var cfg config.Config
	cfg.Register(fs)
	namespace := ""
	if strings.HasPrefix(cmd, "namespace-key") {
		fs.StringVar(&namespace, "namespace", "", "namespace slug")
	}
	if err := fs.Parse(args[2:]); err != nil {
		return err
	}
	if err := cfg.Finish(); err != nil {
		return err
	}
	if strings.HasPrefix(cmd, "namespace-key") && namespace == "" {
		return fmt.Errorf("admin %s: --namespace is required", cmd)
	}
	log := cfg.Logger()
	db, err := openDatabase(ctx, &cfg, log, roleCommand)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	if st, err := migrations.Check(ctx, db.Pool); err != nil {
		return err
	} else if !st.Current() {
		return fmt.Errorf("database migrations pending %v: run artifact-registry migrate up first", st.Pending)
	}
	// These commands touch only the database: no object storage is opened.
	st := store.New(db.Pool, nil, store.Options{})
	if cmd == "signing-key rotate" {
		kid, err := auth.RotateSigningKey(ctx, st)
		if err != nil {
			return err
		}
		fmt.Printf("signing key %s is current: every instance signs with it within %s; tokens of the previous key stay valid until they expire, and keys retired over %s ago were deleted\n",
			kid, auth.KeyRefresh, auth.SigningKeyRetention.Round(time.Second))
		return nil
	}
	keyring, closeKeys, err := openKeyring(ctx, &cfg, st, log)
	if err != nil {
		return err
	}
	defer closeKeys()
	// An insert-only job client: the servers' workers run the jobs.
	jobs, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{Logger: config.JobsLogger(log)})
	if err != nil {
		return fmt.Errorf("create job client: %w", err)
	}
	return runKeyCommand(ctx, os.Stdout, cmd, namespace, st, keyring, jobs)
}

// runKeyCommand runs the root-key and namespace-key commands.
func runKeyCommand(ctx context.Context, out io.Writer, cmd, namespace string, st *store.Store, keyring *credentials.Keyring, jobs *river.Client[pgx.Tx]) error {
	switch cmd {
	case "root-key status":
		return printRootKeys(ctx, out, keyring)
	case "root-key rotate":
		if err := keyrotation.RotateRoot(ctx, st, keyring, jobs); err != nil {
			return err
		}
		fmt.Fprintf(out, "queued %s: a running server whose --root-key-url is %s rewraps every namespace key still under another root key (it must hold those in --previous-root-key-urls); `artifact-registry admin root-key status` shows the progress\n",
			keyrotation.KindRoot, keyring.RootURI())
		return printRootKeys(ctx, out, keyring)
	case "namespace-key status":
		return printNamespaceKeys(ctx, out, st, keyring, namespace)
	case "namespace-key rotate":
		v, err := keyrotation.RotateNamespace(ctx, st, keyring, jobs, namespace)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "namespace key version %d of %s is active; queued %s to rewrap the credentials still under older versions\n",
			v.Version, namespace, keyrotation.KindNamespace)
		return printNamespaceKeys(ctx, out, st, keyring, namespace)
	}
	return fmt.Errorf("admin: unknown command %q", cmd)
}

func printRootKeys(ctx context.Context, out io.Writer, keyring *credentials.Keyring) error {
	counts, err := keyring.RootKeys(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ROOT KEY\tNAMESPACE KEYS\tTHIS INSTANCE")
	for _, c := range counts {
		state := "previous"
		switch {
		case c.Current:
			state = "current"
		case !c.Known:
			state = "not held"
		}
		fmt.Fprintf(w, "%s\t%d\t%s\n", c.URI, c.Keys, state)
	}
	if len(counts) == 0 {
		fmt.Fprintln(w, "(no namespace key yet)\t0\t")
	}
	return w.Flush()
}

func printNamespaceKeys(ctx context.Context, out io.Writer, st *store.Store, keyring *credentials.Keyring, slug string) error {
	ns, err := st.NamespaceBySlug(ctx, slug)
	if err != nil {
		return err
	}
	keys, err := keyring.NamespaceKeys(ctx, ns.ID)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "VERSION\tSTATE\tCREDENTIALS\tROOT KEY\tCREATED")
	for _, k := range keys {
		state := "superseded"
		switch {
		case k.ShreddedAt != nil:
			state = "shredded " + k.ShreddedAt.UTC().Format(time.RFC3339)
		case k.Active:
			state = "active"
		}
		fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%s\n", k.Version, state, k.Rows, k.RootKeyURI, k.CreatedAt.UTC().Format(time.RFC3339))
	}
	if len(keys) == 0 {
		fmt.Fprintf(w, "(namespace %s has no key yet)\t\t\t\t\n", slug)
	}
	return w.Flush()
}

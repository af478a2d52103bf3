package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/rootkey"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/credentials"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// TestKeyCommandsAndJobs drives the key commands and the server's rotation
// jobs on an external database: without --root-key-url the server starts
// (and says credentials cannot be stored) and the commands refuse; with
// key A a credential is sealed; `admin namespace-key rotate` makes version
// 2 active and `admin root-key rotate` (key B, A previous) queues the root
// rewrap; a server configured with B and A runs both jobs, after which
// only B wraps namespace keys and the credential opens with B alone. No
// key material reaches any output.
func TestKeyCommandsAndJobs(t *testing.T) {
	ctx := context.Background()
	bin := buildBinary(t)
	dbURL := testdb.NewURL(t)
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st := store.New(pool, objstore.NewMem(), store.Options{})
	ns, err := st.CreateNamespace(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	keyA := "base64key://" + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xa1}, 32))
	keyB := "base64key://" + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xb2}, 32))
	secretsIn := func(out string) bool {
		return strings.Contains(out, keyA[12:]) || strings.Contains(out, keyB[12:]) || strings.Contains(out, "upstream-token-value")
	}
	dataDir := t.TempDir()
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append(args, "--database-url", dbURL, "--data-dir", dataDir)...)
		cmd.Env = append(cmd.Environ(), "ARTIFACT_REGISTRY_ADMIN_TOKEN=", "ARTIFACT_REGISTRY_ROOT_KEY_URL=", "ARTIFACT_REGISTRY_PREVIOUS_ROOT_KEY_URLS=")
		out, err := cmd.CombinedOutput()
		if secretsIn(string(out)) {
			t.Fatalf("key material in the output of %v:\n%s", args, out)
		}
		return string(out), err
	}

	// No root key on an external database: the server starts, and warns.
	srv := startKeyServer(t, bin, dbURL, dataDir)
	srv.waitReady(t, 2*time.Minute)
	srv.interrupt(t)
	if !strings.Contains(srv.logs.String(), "no root key configured") {
		t.Fatalf("no warning about the missing root key:\n%s", srv.logs)
	}
	if _, err := os.Stat(rootkey.Path(dataDir)); !os.IsNotExist(err) {
		t.Fatal("a root key was generated for an external database")
	}

	a, err := rootkey.Open(ctx, keyA)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Keeper.Close()
	b, err := rootkey.Open(ctx, keyB)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Keeper.Close()
	if out, err := run("admin", "namespace-key", "rotate", "--namespace", "acme", "--root-key-url", keyA); err == nil || !strings.Contains(out, "no encryption key to rotate") {
		t.Fatalf("rotating before any credential: %v\n%s", err, out)
	}
	row := sealToken(t, st, a, ns.ID, "upstream-token-value")

	if out, err := run("admin", "namespace-key", "rotate", "--namespace", "acme"); err == nil || !strings.Contains(out, "--root-key-url") {
		t.Fatalf("rotating without a root key: %v\n%s", err, out)
	}
	out, err := run("admin", "namespace-key", "rotate", "--namespace", "acme", "--root-key-url", keyA)
	if err != nil || !strings.Contains(out, "version 2 of acme is active") {
		t.Fatalf("namespace-key rotate: %v\n%s", err, out)
	}
	out, err = run("admin", "root-key", "rotate", "--root-key-url", keyB, "--previous-root-key-urls", keyA)
	if err != nil || !strings.Contains(out, "queued credentials:rewrap-root") || !strings.Contains(out, a.URI) || !strings.Contains(out, "previous") {
		t.Fatalf("root-key rotate: %v\n%s", err, out)
	}
	var queued int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind IN ('credentials:rewrap-namespace', 'credentials:rewrap-root') AND state = 'available'`).Scan(&queued); err != nil || queued != 2 {
		t.Fatalf("queued rotation jobs: %d %v", queued, err)
	}

	srv = startKeyServer(t, bin, dbURL, dataDir, "--root-key-url", keyB, "--previous-root-key-urls", keyA)
	srv.waitReady(t, 2*time.Minute)
	deadline := time.Now().Add(2 * time.Minute)
	for queued > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("rotation jobs not done; logs:\n%s", srv.logs)
		}
		time.Sleep(100 * time.Millisecond)
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind LIKE 'credentials:%' AND state <> 'completed'`).Scan(&queued); err != nil {
			t.Fatal(err)
		}
	}
	srv.interrupt(t)
	if secretsIn(srv.logs.String()) || !strings.Contains(srv.logs.String(), "no live namespace key is wrapped under another root key") {
		t.Fatalf("server logs:\n%s", srv.logs)
	}

	out, err = run("admin", "root-key", "status", "--root-key-url", keyB)
	if err != nil || strings.Contains(out, a.URI) || !strings.Contains(out, b.URI) {
		t.Fatalf("root-key status: %v\n%s", err, out)
	}
	out, err = run("admin", "namespace-key", "status", "--namespace", "acme", "--root-key-url", keyB)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 3 || strings.Join(strings.Fields(lines[1])[:3], " ") != "1 superseded 0" ||
		strings.Join(strings.Fields(lines[2])[:3], " ") != "2 active 1" {
		t.Fatalf("namespace-key status: %v\n%s", err, out)
	}
	onlyB, err := credentials.New(st, credentials.Options{Root: b})
	if err != nil {
		t.Fatal(err)
	}
	if got := openToken(t, st, onlyB, row); got != "upstream-token-value" {
		t.Fatal("the credential does not open with the new root key")
	}
}

func startKeyServer(t *testing.T, bin, dbURL, dataDir string, args ...string) *server {
	t.Helper()
	s := &server{addr: freeAddr(t), logs: &syncBuffer{}}
	s.cmd = exec.Command(bin, append([]string{"serve", "--listen", s.addr, "--data-dir", filepath.Join(dataDir, "serve"), "--database-url", dbURL}, args...)...)
	s.cmd.Env = append(os.Environ(), "ARTIFACT_REGISTRY_ADMIN_TOKEN=", "ARTIFACT_REGISTRY_ROOT_KEY_URL=", "ARTIFACT_REGISTRY_PREVIOUS_ROOT_KEY_URLS=")
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// sealToken inserts an npm remote repository of namespace ns whose token
// is sealed under root.
func sealToken(t *testing.T, st *store.Store, root *credentials.RootKey, ns uuid.UUID, token string) credentials.Row {
	t.Helper()
	ctx := context.Background()
	k, err := credentials.New(st, credentials.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	repo, id := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	row := credentials.Row{Table: credentials.NpmRemote, NamespaceID: ns, ID: id}
	err = st.WithTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO repositories (id, namespace_id, name, format, kind, visibility) VALUES ($1, $2, 'npmjs', 2, 2, 1)`, repo, ns); err != nil {
			return err
		}
		c, err := k.Seal(ctx, tx, row, credentials.NewSecret(token))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO npm_remote_repositories (id, namespace_id, repository_id, url, `+credentials.NpmRemote.UnitColumns()+`)
			VALUES ($1, $2, $3, 'https://upstream.test', $4, $5, $6, $7)`, append([]any{id, ns, repo}, c.Args()...)...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return row
}

func openToken(t *testing.T, st *store.Store, k *credentials.Keyring, row credentials.Row) string {
	t.Helper()
	s := row.Table.NewScan()
	if err := st.Pool().QueryRow(context.Background(), `SELECT `+row.Table.UnitColumns()+` FROM npm_remote_repositories WHERE namespace_id = $1 AND id = $2`,
		row.NamespaceID, row.ID).Scan(s.Dest()...); err != nil {
		t.Fatal(err)
	}
	c, err := s.Columns()
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.Open(context.Background(), st.Pool(), row, c)
	if err != nil {
		t.Fatal(err)
	}
	return got[0].Reveal()
}

package keyrotation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"gocloud.dev/secrets/localsecrets"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/credentials"
)

func TestMain(m *testing.M) { testdb.Main(m) }

func rootKey(t *testing.T, uri string) *credentials.RootKey {
	t.Helper()
	sk, err := localsecrets.NewRandomKey()
	if err != nil {
		t.Fatal(err)
	}
	k := localsecrets.NewKeeper(sk)
	t.Cleanup(func() { _ = k.Close() })
	return &credentials.RootKey{URI: uri, Keeper: k}
}

func keyring(t *testing.T, st *store.Store, root *credentials.RootKey, previous ...*credentials.RootKey) *credentials.Keyring {
	t.Helper()
	k, err := credentials.New(st, credentials.Options{Root: root, Previous: previous})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// remote inserts an npm remote repository of namespace slug whose token
// is sealed with k, as the remote-repository code will.
func remote(t *testing.T, st *store.Store, k *credentials.Keyring, slug, token string) credentials.Row {
	t.Helper()
	ctx := context.Background()
	ns, err := st.NamespaceBySlug(ctx, slug)
	if err != nil {
		ns = testsupport.Namespace(t, st, slug)
	}
	repo, id := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	row := credentials.Row{Table: credentials.NpmRemote, NamespaceID: ns.ID, ID: id}
	err = st.WithTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO repositories (id, namespace_id, name, format, kind, visibility) VALUES ($1, $2, $3, 2, 2, 1)`,
			repo, ns.ID, "npmjs-"+id.String()[30:]); err != nil {
			return err
		}
		c, err := k.Seal(ctx, tx, row, credentials.NewSecret(token))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO npm_remote_repositories (id, namespace_id, repository_id, url, `+credentials.NpmRemote.UnitColumns()+`)
			VALUES ($1, $2, $3, 'https://upstream.test', $4, $5, $6, $7)`, append([]any{id, ns.ID, repo}, c.Args()...)...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return row
}

func open(t *testing.T, st *store.Store, k *credentials.Keyring, row credentials.Row) (string, error) {
	t.Helper()
	s := row.Table.NewScan()
	if err := st.Pool().QueryRow(context.Background(), `SELECT `+row.Table.UnitColumns()+` FROM `+row.Table.Name+` WHERE namespace_id = $1 AND id = $2`,
		row.NamespaceID, row.ID).Scan(s.Dest()...); err != nil {
		t.Fatal(err)
	}
	c, err := s.Columns()
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.Open(context.Background(), st.Pool(), row, c)
	if err != nil {
		return "", err
	}
	return got[0].Reveal(), nil
}

// client starts a River client running the rotation workers of keys.
func client(t *testing.T, st *store.Store, keys *credentials.Keyring) *river.Client[pgx.Tx] {
	t.Helper()
	workers := river.NewWorkers()
	New(keys, Config{Batch: 2}).Register(workers)
	c, err := river.NewClient(riverpgxv5.New(st.Pool()), &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
		Workers:           workers,
		Logger:            testsupport.Discard(),
		FetchCooldown:     5 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		TestOnly:          true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	})
	return c
}

// wait returns the next finished (completed or failed) job of kind.
func wait(t *testing.T, events <-chan *river.Event, kind string) *rivertype.JobRow {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case ev := <-events:
			if ev.Job.Kind == kind {
				return ev.Job
			}
		case <-timeout:
			t.Fatalf("no %s job finished", kind)
		}
	}
}

// TestNamespaceRotationJob: RotateNamespace makes version 2 active and
// queues the rewrap; the job moves the five rows (batches of two) and
// every credential still opens; another namespace is untouched.
func TestNamespaceRotationJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testsupport.Store(t, testsupport.StoreOptions{Mem: true})
	root := rootKey(t, "base64key://sha256:root-a")
	keys := keyring(t, st, root)
	var rows []credentials.Row
	for i := range 5 {
		rows = append(rows, remote(t, st, keys, "acme", fmt.Sprintf("token-%d", i)))
	}
	other := remote(t, st, keys, "other", "other-token")

	c := client(t, st, keys)
	events, cancel := c.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	defer cancel()
	v, err := RotateNamespace(ctx, st, keys, c, "acme")
	if err != nil || v.Version != 2 {
		t.Fatalf("rotate: %+v %v", v, err)
	}
	if job := wait(t, events, KindNamespace); job.State != rivertype.JobStateCompleted {
		t.Fatalf("rewrap job %s: %v", job.State, job.Errors)
	}
	status, err := keys.NamespaceKeys(ctx, rows[0].NamespaceID)
	if err != nil || len(status) != 2 || status[0].Rows != 0 || status[0].Active || status[1].Rows != 5 {
		t.Fatalf("keys after the job: %+v %v", status, err)
	}
	for i, row := range rows {
		if got, err := open(t, st, keyring(t, st, root), row); err != nil || got != fmt.Sprintf("token-%d", i) {
			t.Fatalf("row %d after the rotation: %v", i, err)
		}
	}
	if st, err := keys.NamespaceKeys(ctx, other.NamespaceID); err != nil || len(st) != 1 || st[0].Version != 1 {
		t.Fatalf("the other namespace's keys: %+v %v", st, err)
	}

	if _, err := RotateNamespace(ctx, st, keys, c, "nobody"); !store.HasCode(err, store.CodeNotFound) {
		t.Fatalf("rotating an unknown namespace: %v", err)
	}
	testsupport.Namespace(t, st, "empty")
	if _, err := RotateNamespace(ctx, st, keys, c, "empty"); !store.HasCode(err, credentials.CodeNoNamespaceKey) {
		t.Fatalf("rotating a namespace without a key: %v", err)
	}
}

// TestRootRotationJob: keys under root A; RotateRoot from an instance
// whose current key is B queues the job; a worker still configured with A
// fails it (retried later); a worker with B, holding A as previous,
// completes it. Then only B wraps namespace keys and a keyring without A
// opens every credential.
func TestRootRotationJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testsupport.Store(t, testsupport.StoreOptions{Mem: true})
	a, b := rootKey(t, "base64key://sha256:root-a"), rootKey(t, "base64key://sha256:root-b")
	ka := keyring(t, st, a)
	one, two := remote(t, st, ka, "one", "token-one"), remote(t, st, ka, "two", "token-two")

	stale := client(t, st, ka)
	events, cancel := stale.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	kb := keyring(t, st, b, a)
	if err := RotateRoot(ctx, st, kb, stale); err != nil {
		t.Fatal(err)
	}
	job := wait(t, events, KindRoot)
	cancel()
	if job.State == rivertype.JobStateCompleted || len(job.Errors) == 0 || !strings.Contains(job.Errors[0].Error, "root-b") {
		t.Fatalf("the job on an instance with the old key: %s %+v", job.State, job.Errors)
	}
	stopCtx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if err := stale.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}

	current := client(t, st, kb)
	events, cancel = current.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	defer cancel()
	// The retry is scheduled a second or so out; make it due now.
	if _, err := st.Pool().Exec(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now() WHERE id = $1`, job.ID); err != nil {
		t.Fatal(err)
	}
	if job := wait(t, events, KindRoot); job.State != rivertype.JobStateCompleted {
		t.Fatalf("the job on an instance with the new key: %s %+v", job.State, job.Errors)
	}
	counts, err := kb.RootKeys(ctx)
	if err != nil || len(counts) != 1 || counts[0].URI != b.URI || counts[0].Keys != 2 {
		t.Fatalf("root keys after the job: %+v %v", counts, err)
	}
	onlyB := keyring(t, st, b)
	for row, want := range map[credentials.Row]string{one: "token-one", two: "token-two"} {
		if got, err := open(t, st, onlyB, row); err != nil || got != want {
			t.Fatalf("open after the root rotation: %v", err)
		}
	}
	if err := RotateRoot(ctx, st, keyring(t, st, nil), current); err == nil {
		t.Fatal("a root rotation without a root key was queued")
	}
}

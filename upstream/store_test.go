package upstream_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/objstore"
	"github.com/artifact-registry/artifact-registry/upstream"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// storeStage is how a remote repository wires a fill to the blob store:
// the body streams into a staged upload (temporary storage, hashed by the
// store too), and the commit runs the store's CommitStaged inside the
// caller's transaction, where the remote's own rows would attach the
// blob.
type storeStage struct {
	st  *store.Store
	ref store.UploadRef
	// committed is told what was attached once the transaction has
	// committed (not from inside it: a reader told earlier could look
	// for the blob before the commit makes it visible).
	committed func(use store.StagedUse)
}

func (s storeStage) stage(ctx context.Context, body io.Reader) (upstream.Staged, error) {
	b, err := s.st.StageStream(ctx, s.ref, body)
	if err != nil {
		return nil, err
	}
	return &stagedBlob{s: s, b: b}, nil
}

type stagedBlob struct {
	s storeStage
	b *store.StagedBlob
}

func (sb *stagedBlob) Commit(ctx context.Context, res *upstream.FillResult) error {
	// The store computed its own sha256 while staging: it must agree
	// with the digest the fill verified.
	if sum := sb.b.SHA256(); !bytes.Equal(sum[:], res.Digests[0].Sum) || sb.b.Size() != res.Size {
		return io.ErrUnexpectedEOF
	}
	var attached store.StagedUse
	err := sb.s.st.WithTx(ctx, func(tx pgx.Tx) error {
		_, err := sb.s.st.CommitStaged(ctx, tx, sb.b, func(use store.StagedUse) error {
			attached = use // the remote's own rows would attach the blob here, in tx
			return nil
		})
		return err
	})
	sb.b.Close(ctx, err == nil)
	if err == nil {
		sb.s.committed(attached)
	}
	return err
}

func (sb *stagedBlob) Discard(ctx context.Context) { sb.b.Close(ctx, false) }

// TestFillIntoStore: a fill wired to the store's staged upload and commit
// leaves a complete, readable blob after its only client disconnected
// mid-body; a body that does not match its digest leaves no blob and no
// upload behind.
func TestFillIntoStore(t *testing.T) {
	ctx := context.Background()
	bucket := t.TempDir()
	objects, err := objstore.Open(ctx, "file://"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { objects.Close() })
	pool := testdb.New(t)
	st := store.New(pool, objects, store.Options{})
	ns, err := st.CreateNamespace(ctx, "remote-fill")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := st.CreateRepository(ctx, store.NewRepository{Namespace: ns.Slug, Name: "cache", Format: enum.FormatOCI,
		Kind: enum.KindHosted, Visibility: enum.VisibilityPrivate})
	if err != nil {
		t.Fatal(err)
	}

	body := make([]byte, 24<<20)
	_, _ = rand.NewChaCha8([32]byte{1, 2}).Read(body) // never fails (math/rand/v2 docs)
	sum := sha256.Sum256(body)
	dg := "sha256:" + hex.EncodeToString(sum[:])
	var gets atomic.Int64
	var corrupt atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		gets.Add(1)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		fl := w.(http.Flusher)
		for off := 0; off < len(body); off += 1 << 20 {
			chunk := body[off : off+1<<20]
			if corrupt.Load() && off == 0 {
				chunk = bytes.Clone(chunk)
				chunk[0] ^= 0xff
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
			fl.Flush()
			time.Sleep(3 * time.Millisecond)
		}
	}))
	t.Cleanup(up.Close)
	c, err := upstream.New(upstream.Config{URL: up.URL, Name: "store-test", SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })

	attached := make(chan store.StagedUse, 2)
	stage := storeStage{st: st, ref: store.UploadRef{NamespaceID: ns.ID, RepositoryID: repo.ID},
		committed: func(use store.StagedUse) { attached <- use }}
	want, err := upstream.ParseDigest(dg)
	if err != nil {
		t.Fatal(err)
	}
	req := upstream.FillRequest{Key: "blob:" + dg, Request: upstream.Request{Path: "v2/r/blobs/" + dg},
		Expect: upstream.Expect{Size: int64(len(body)), Digests: []upstream.Digest{want}}, Stage: stage.stage}

	t.Run("mismatch", func(t *testing.T) {
		corrupt.Store(true)
		defer corrupt.Store(false)
		fr, err := c.Fill(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(io.Discard, fr)
		if !upstream.IsKind(err, upstream.KindInvalid) {
			t.Fatalf("read: %v", err)
		}
		if _, err := fr.Wait(ctx); !upstream.IsKind(err, upstream.KindInvalid) {
			t.Fatalf("wait: %v", err)
		}
		fr.Close()
		if _, _, err := st.OpenBlob(ctx, ns.ID, sum, 0, -1); err == nil {
			t.Fatal("a corrupt fill left a blob")
		}
		var sessions int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM upload_sessions WHERE namespace_id = $1`, ns.ID).Scan(&sessions); err != nil {
			t.Fatal(err)
		}
		if sessions != 0 {
			t.Fatalf("%d upload sessions left", sessions)
		}
	})

	t.Run("client-disconnects", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		fr, err := c.Fill(cctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(fr, make([]byte, 2<<20)); err != nil {
			t.Fatal(err)
		}
		cancel()
		fr.Close()
		select {
		case use := <-attached:
			if use.Blob == nil || use.Blob.Size != int64(len(body)) {
				t.Fatalf("attached %+v", use.Blob)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("the fill did not commit after its client left")
		}
		rc, b, err := st.OpenBlob(ctx, ns.ID, sum, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, body) || b.Size != int64(len(body)) {
			t.Fatalf("stored blob: %d bytes, err %v", len(got), err)
		}
		if n := gets.Load(); n != 2 {
			t.Fatalf("upstream GETs %d, want 2 (the corrupt one and this one)", n)
		}
	})
}

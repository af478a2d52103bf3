package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

func randomBytes(n int, seed uint64) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b) // never fails (math/rand/v2 docs)
	return b
}

func want(data []byte) Expected {
	return Expected{SHA256: sha256.Sum256(data), Size: int64(len(data))}
}

// uploadKeys lists the temporary upload objects left in the bucket.
func (f *blobFixture) uploadKeys(t testing.TB) []string {
	var out []string
	for _, k := range f.objectKeys(t) {
		if strings.Contains(k, "/uploads/") {
			out = append(out, k)
		}
	}
	return out
}

func TestPutBlobAndRead(t *testing.T) {
	for _, backend := range objectBackends {
		t.Run(backend, func(t *testing.T) {
			f := newBlobFixture(t, backend, Options{})
			ctx := context.Background()
			data := randomBytes(3<<20+5, 1)
			sha1 := [20]byte{1, 2, 3}
			w := want(data)
			w.SHA1 = &sha1
			res, err := f.store.PutBlob(ctx, f.ref(uuid.Nil), bytes.NewReader(data), w)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Created || res.Deduplicated || res.Reuploaded {
				t.Fatalf("first put: %+v", res)
			}
			if res.Blob.ObjectStorageKey != objstore.BlobKey(f.ns, w.SHA256) {
				t.Fatalf("object key %s", res.Blob.ObjectStorageKey)
			}
			st, err := f.store.StatBlob(ctx, f.ns, w.SHA256)
			if err != nil {
				t.Fatal(err)
			}
			if st.Size != int64(len(data)) || st.MetadataSHA1 == nil || *st.MetadataSHA1 != sha1 || st.ID != res.Blob.ID {
				t.Fatalf("stat: %+v", st)
			}
			r, b, err := f.store.OpenBlob(ctx, f.ns, w.SHA256, 100, 1000)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(r)
			r.Close()
			if !bytes.Equal(got, data[100:1100]) || b.SHA256 != w.SHA256 {
				t.Fatal("range read differs")
			}
			r, _, err = f.store.OpenBlob(ctx, f.ns, w.SHA256, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			got, _ = io.ReadAll(r)
			r.Close()
			if !bytes.Equal(got, data) {
				t.Fatal("full read differs")
			}
			if _, _, err := f.store.OpenBlob(ctx, f.ns, w.SHA256, int64(len(data)), 1); !HasCode(err, CodeRangeNotSatisfiable) {
				t.Fatalf("range past the end: %v", err)
			}
			if _, err := f.store.StatBlob(ctx, f.ns, [32]byte{9}); !HasCode(err, CodeBlobUnknown) {
				t.Fatalf("unknown blob: %v", err)
			}
			if n := f.count(t, `SELECT count(*) FROM upload_sessions`); n != 0 {
				t.Fatalf("%d sessions left", n)
			}
			if keys := f.uploadKeys(t); len(keys) != 0 {
				t.Fatalf("upload data left: %v", keys)
			}
			// Same bytes again: deduplicated, no new object, no candidate check.
			res, err = f.store.PutBlob(ctx, f.ref(uuid.Nil), bytes.NewReader(data), want(data))
			if err != nil {
				t.Fatal(err)
			}
			if res.Created || !res.Deduplicated || res.ObjectChecked || res.Blob.ID != st.ID {
				t.Fatalf("second put: %+v", res)
			}
			if keys := f.objectKeys(t); len(keys) != 1 {
				t.Fatalf("objects: %v", keys)
			}
			// The empty blob is a blob too.
			res, err = f.store.PutBlob(ctx, f.ref(uuid.Nil), bytes.NewReader(nil), want(nil))
			if err != nil || !res.Created || res.Blob.Size != 0 {
				t.Fatalf("empty blob: %+v %v", res, err)
			}
		})
	}
}

// TestConcurrentCommitSameContent: 8 goroutines commit the same bytes at
// once (4 monolithic, 4 resumable): one blob row, one object, one creator.
func TestConcurrentCommitSameContent(t *testing.T) {
	for _, backend := range objectBackends {
		t.Run(backend, func(t *testing.T) {
			f := newBlobFixture(t, backend, Options{})
			ctx := context.Background()
			data := randomBytes(2<<20+3, 2)
			w := want(data)
			// Prepare the resumable uploads up to their last chunk so that the
			// commits race.
			var refs []UploadRef
			for range 4 {
				u, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.store.AppendUpload(ctx, u.Ref(), 0, bytes.NewReader(data[:1<<20])); err != nil {
					t.Fatal(err)
				}
				refs = append(refs, u.Ref())
			}
			start := make(chan struct{})
			results := make([]*CommitResult, 8)
			errs := make([]error, 8)
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					<-start
					if i < 4 {
						results[i], errs[i] = f.store.PutBlob(ctx, f.ref(uuid.Nil), bytes.NewReader(data), w)
					} else {
						results[i], errs[i] = f.store.CommitUpload(ctx, refs[i-4], bytes.NewReader(data[1<<20:]), w)
					}
				})
			}
			close(start)
			wg.Wait()
			created := 0
			for i, err := range errs {
				if err != nil {
					t.Fatalf("committer %d: %v", i, err)
				}
				if results[i].Created {
					created++
				}
				if results[i].Blob.ID != results[0].Blob.ID {
					t.Fatalf("committer %d got blob %d, committer 0 got %d", i, results[i].Blob.ID, results[0].Blob.ID)
				}
			}
			if created != 1 {
				t.Fatalf("%d committers created the blob", created)
			}
			if n := f.count(t, `SELECT count(*) FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2`, f.ns, w.SHA256[:]); n != 1 {
				t.Fatalf("%d blob rows", n)
			}
			if keys := f.objectKeys(t); len(keys) != 1 || keys[0] != objstore.BlobKey(f.ns, w.SHA256) {
				t.Fatalf("objects: %v", keys)
			}
			if n := f.count(t, `SELECT count(*) FROM upload_sessions`); n != 0 {
				t.Fatalf("%d sessions left", n)
			}
			r, _, err := f.store.OpenBlob(ctx, f.ns, w.SHA256, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(r)
			r.Close()
			if !bytes.Equal(got, data) {
				t.Fatal("stored bytes differ")
			}
		})
	}
}

// secondStore is another Store instance (a replica after a restart) over
// the same database and the same bucket.
func (f *blobFixture) secondStore(t *testing.T) *Store {
	t.Helper()
	var objects *objstore.Store
	if f.backend == "file" {
		var err error
		if objects, err = objstore.Open(context.Background(), f.bucketURL); err != nil {
			t.Fatal(err)
		}
	} else {
		objects = objstore.New(f.objects.Bucket())
	}
	return New(f.pool, objects, Options{Clock: f.clock})
}

// TestResumableAcrossStores: a resumable upload interrupted after N chunks
// continues on a second store instance, from the persisted hash state.
func TestResumableAcrossStores(t *testing.T) {
	for _, backend := range objectBackends {
		t.Run(backend, func(t *testing.T) {
			f := newBlobFixture(t, backend, Options{})
			ctx := context.Background()
			data := randomBytes(5<<20+123, 3)
			chunk := 1<<20 + 7
			u, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable)
			if err != nil {
				t.Fatal(err)
			}
			const first = 3 // chunks sent to the first instance
			off := 0
			for range first {
				u, err = f.store.AppendUpload(ctx, u.Ref(), int64(off), bytes.NewReader(data[off:off+chunk]))
				if err != nil {
					t.Fatal(err)
				}
				off += chunk
			}
			if u.Size != int64(off) {
				t.Fatalf("size %d after %d chunks", u.Size, first)
			}
			// "Restart": a new instance continues.
			s2 := f.secondStore(t)
			st, err := s2.UploadStatus(ctx, u.Ref())
			if err != nil || st.Size != int64(off) {
				t.Fatalf("status on the second instance: %+v %v", st, err)
			}
			for off+chunk < len(data) {
				if _, err := s2.AppendUpload(ctx, u.Ref(), int64(off), bytes.NewReader(data[off:off+chunk])); err != nil {
					t.Fatal(err)
				}
				off += chunk
			}
			res, err := s2.CommitUpload(ctx, u.Ref(), bytes.NewReader(data[off:]), want(data))
			if err != nil {
				t.Fatal(err)
			}
			r, _, err := f.store.OpenBlob(ctx, f.ns, res.Blob.SHA256, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(r)
			r.Close()
			if !bytes.Equal(got, data) {
				t.Fatal("stored bytes differ")
			}
			if keys := f.uploadKeys(t); len(keys) != 0 {
				t.Fatalf("upload data left: %v", keys)
			}
		})
	}
}

// TestChunkOutOfOrder: a chunk at the wrong offset is refused with the
// current size and changes nothing; the upload then completes normally.
func TestChunkOutOfOrder(t *testing.T) {
	for _, backend := range objectBackends {
		t.Run(backend, func(t *testing.T) {
			f := newBlobFixture(t, backend, Options{})
			ctx := context.Background()
			data := randomBytes(300000, 4)
			u, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.store.AppendUpload(ctx, u.Ref(), 0, bytes.NewReader(data[:100000])); err != nil {
				t.Fatal(err)
			}
			for _, off := range []int64{0, 50000, 100001, 200000} {
				_, err := f.store.AppendUpload(ctx, u.Ref(), off, bytes.NewReader(data[200000:]))
				if e, ok := AsError(err); !ok || e.Code != CodeRangeMismatch || e.Size != 100000 {
					t.Fatalf("offset %d: %v", off, err)
				}
			}
			st, err := f.store.UploadStatus(ctx, u.Ref())
			if err != nil || st.Size != 100000 || st.Dirty {
				t.Fatalf("status: %+v %v", st, err)
			}
			if _, err := f.store.AppendUpload(ctx, u.Ref(), 100000, bytes.NewReader(data[100000:200000])); err != nil {
				t.Fatal(err)
			}
			if _, err := f.store.CommitUpload(ctx, u.Ref(), bytes.NewReader(data[200000:]), want(data)); err != nil {
				t.Fatal(err)
			}
			// A session of another repository is not reachable.
			other := f.newRepository(t, f.ns)
			u2, err := f.store.StartUpload(ctx, f.ns, other, UploadResumable)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.store.AppendUpload(ctx, f.ref(u2.UploadID), 0, bytes.NewReader(data)); !HasCode(err, CodeUploadUnknown) {
				t.Fatalf("foreign repository: %v", err)
			}
		})
	}
}

// gatedReader blocks its first Read until release is closed, after telling
// started.
type gatedReader struct {
	r       io.Reader
	once    sync.Once
	started chan<- struct{}
	release <-chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	g.once.Do(func() {
		g.started <- struct{}{}
		<-g.release
	})
	return g.r.Read(p)
}

// TestConcurrentChunks: two writers send a chunk for the same offset at the
// same time. At most one wins; the loser gets CodeUploadConflict and poisons
// the session, which then refuses chunks and commits and creates no blob.
// On the mem backend the winner's recorded state still describes exactly
// the winner's bytes: unpoisoned by hand, the upload commits the winner's
// content, never a mix with the loser's.
func TestConcurrentChunks(t *testing.T) {
	for _, backend := range objectBackends {
		t.Run(backend, func(t *testing.T) {
			f := newBlobFixture(t, backend, Options{})
			ctx := context.Background()
			head := randomBytes(70000, 5)
			chunks := [][]byte{randomBytes(3<<20, 6), randomBytes(3<<20, 7)}
			u, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.store.AppendUpload(ctx, u.Ref(), 0, bytes.NewReader(head)); err != nil {
				t.Fatal(err)
			}
			events := make(chan struct{}, 4)
			release := make(chan struct{})
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Go(func() {
					r := &gatedReader{r: bytes.NewReader(chunks[i]), started: events, release: release}
					_, errs[i] = f.store.AppendUpload(ctx, u.Ref(), int64(len(head)), r)
					if errs[i] != nil {
						r.once.Do(func() {}) // never read: report as done
						events <- struct{}{}
					}
				})
			}
			// Both writers are inside AppendUpload (reading) or already
			// refused (file lock): let them go on.
			<-events
			<-events
			close(release)
			wg.Wait()
			won, conflicts := -1, 0
			for i, err := range errs {
				switch {
				case err == nil:
					if won >= 0 {
						t.Fatal("both writers won")
					}
					won = i
				case HasCode(err, CodeUploadConflict):
					conflicts++
				case HasCode(err, CodeUploadPoisoned):
					// It read the session after the other writer had
					// already poisoned it (file backend: lost the lock
					// race before its own read).
				default:
					t.Fatalf("writer %d: %v", i, err)
				}
			}
			if conflicts == 0 {
				t.Fatal("no writer lost")
			}
			st, err := f.store.UploadStatus(ctx, u.Ref())
			if err != nil || !st.Dirty {
				t.Fatalf("status after the race: %+v %v", st, err)
			}
			if _, err := f.store.AppendUpload(ctx, u.Ref(), st.Size, bytes.NewReader([]byte("x"))); !HasCode(err, CodeUploadPoisoned) {
				t.Fatalf("append to a poisoned session: %v", err)
			}
			full := append(append([]byte{}, head...), chunks[max(won, 0)]...)
			if _, err := f.store.CommitUpload(ctx, u.Ref(), nil, want(full)); !HasCode(err, CodeUploadPoisoned) {
				t.Fatalf("commit of a poisoned session: %v", err)
			}
			if n := f.count(t, `SELECT count(*) FROM blob_storage_blobs`); n != 0 {
				t.Fatalf("%d blob rows", n)
			}
			if won < 0 {
				return
			}
			if st.Size != int64(len(full)) {
				t.Fatalf("size %d, want %d", st.Size, len(full))
			}
			if _, err := f.pool.Exec(ctx, `UPDATE upload_sessions SET dirty = false WHERE upload_id = $1`, u.UploadID); err != nil {
				t.Fatal(err)
			}
			res, err := f.store.CommitUpload(ctx, u.Ref(), nil, want(full))
			if err != nil {
				t.Fatalf("commit of the winner's bytes: %v", err)
			}
			r, _, err := f.store.OpenBlob(ctx, f.ns, res.Blob.SHA256, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(r)
			r.Close()
			if !bytes.Equal(got, full) {
				t.Fatal("committed bytes are not the winner's")
			}
		})
	}
}

// TestSequentialChunkRace: two writers with the same offset one after the
// other: the second is a range mismatch, the hash stays right.
func TestSequentialChunkRace(t *testing.T) {
	for _, backend := range objectBackends {
		t.Run(backend, func(t *testing.T) {
			f := newBlobFixture(t, backend, Options{})
			ctx := context.Background()
			a, b := randomBytes(1000, 8), randomBytes(1000, 9)
			u, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.store.AppendUpload(ctx, u.Ref(), 0, bytes.NewReader(a)); err != nil {
				t.Fatal(err)
			}
			if _, err := f.store.AppendUpload(ctx, u.Ref(), 0, bytes.NewReader(b)); !HasCode(err, CodeRangeMismatch) {
				t.Fatalf("second writer: %v", err)
			}
			if _, err := f.store.CommitUpload(ctx, u.Ref(), nil, want(a)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCommitMismatch: a wrong digest or size leaves no blob row, no object
// and no session.
func TestCommitMismatch(t *testing.T) {
	for _, backend := range objectBackends {
		t.Run(backend, func(t *testing.T) {
			f := newBlobFixture(t, backend, Options{})
			ctx := context.Background()
			data := randomBytes(2<<20+1, 10)
			wrongDigest := want(data)
			wrongDigest.SHA256[0] ^= 1
			wrongSize := want(data)
			wrongSize.Size++
			for name, w := range map[string]Expected{"digest": wrongDigest, "size": wrongSize} {
				wantErr := errs.New(CodeDigestMismatch, "digest mismatch")
				if name == "size" {
					wantErr = errs.New(CodeSizeMismatch, "size mismatch")
				}
				if _, err := f.store.PutBlob(ctx, f.ref(uuid.Nil), bytes.NewReader(data), w); !errors.Is(err, wantErr) {
					t.Fatalf("monolithic, wrong %s: %v", name, err)
				}
				u, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.store.AppendUpload(ctx, u.Ref(), 0, bytes.NewReader(data[:1<<20])); err != nil {
					t.Fatal(err)
				}
				if _, err := f.store.CommitUpload(ctx, u.Ref(), bytes.NewReader(data[1<<20:]), w); !errors.Is(err, wantErr) {
					t.Fatalf("resumable, wrong %s: %v", name, err)
				}
				if _, err := f.store.UploadStatus(ctx, u.Ref()); !HasCode(err, CodeUploadUnknown) {
					t.Fatalf("session after a mismatch: %v", err)
				}
			}
			if n := f.count(t, `SELECT count(*) FROM blob_storage_blobs`); n != 0 {
				t.Fatalf("%d blob rows", n)
			}
			if n := f.count(t, `SELECT count(*) FROM upload_sessions`); n != 0 {
				t.Fatalf("%d sessions", n)
			}
			if keys := f.objectKeys(t); len(keys) != 0 {
				t.Fatalf("objects left: %v", keys)
			}
		})
	}
}

// TestExpiredUploads: the upload purge query (docs/schema.md "Upload
// sessions") returns sessions past
// expires_at, oldest first, bounded by its limit; purging removes row and
// data; an expired session refuses chunks.
func TestExpiredUploads(t *testing.T) {
	for _, backend := range objectBackends {
		t.Run(backend, func(t *testing.T) {
			f := newBlobFixture(t, backend, Options{MonolithicUploadTTL: time.Hour, ResumableUploadTTL: 24 * time.Hour})
			ctx := context.Background()
			var mono, resum []*Upload
			for i := range 3 {
				u, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadMonolithic)
				if err != nil {
					t.Fatal(err)
				}
				mono = append(mono, u)
				u, err = f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.store.AppendUpload(ctx, u.Ref(), 0, bytes.NewReader(content(i))); err != nil {
					t.Fatal(err)
				}
				resum = append(resum, u)
				f.clock.Advance(time.Minute)
			}
			if e, err := f.store.ExpiredUploads(ctx, 100); err != nil || len(e) != 0 {
				t.Fatalf("nothing expired yet: %v %v", e, err)
			}
			f.clock.Advance(time.Hour - 90*time.Second) // past the first two monolithic sessions only
			e, err := f.store.ExpiredUploads(ctx, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(e) != 2 || e[0].UploadID != mono[0].UploadID || e[1].UploadID != mono[1].UploadID {
				t.Fatalf("expired after ~1h: %+v", e)
			}
			if e, _ := f.store.ExpiredUploads(ctx, 1); len(e) != 1 || e[0].UploadID != mono[0].UploadID {
				t.Fatalf("limit 1: %+v", e)
			}
			if _, err := f.store.CommitUpload(ctx, mono[0].Ref(), bytes.NewReader(nil), want(nil)); !HasCode(err, CodeUploadUnknown) {
				t.Fatalf("commit of an expired session: %v", err)
			}
			f.clock.Advance(24 * time.Hour)
			if _, err := f.store.AppendUpload(ctx, resum[0].Ref(), int64(len(content(0))), bytes.NewReader([]byte("more"))); !HasCode(err, CodeUploadUnknown) {
				t.Fatalf("append to an expired session: %v", err)
			}
			e, err = f.store.ExpiredUploads(ctx, 100)
			if err != nil || len(e) != 6 {
				t.Fatalf("expired after a day: %d %v", len(e), err)
			}
			for i := 1; i < len(e); i++ {
				if e[i].ExpiresAt.Before(e[i-1].ExpiresAt) {
					t.Fatal("not ordered by expires_at")
				}
			}
			if len(f.uploadKeys(t)) == 0 {
				t.Fatal("expected upload data before the purge")
			}
			n, err := f.store.PurgeExpiredUploads(ctx, 4)
			if err != nil || n != 4 {
				t.Fatalf("purge: %d %v", n, err)
			}
			n, err = f.store.PurgeExpiredUploads(ctx, 100)
			if err != nil || n != 2 {
				t.Fatalf("purge the rest: %d %v", n, err)
			}
			if c := f.count(t, `SELECT count(*) FROM upload_sessions`); c != 0 {
				t.Fatalf("%d sessions left", c)
			}
			if keys := f.uploadKeys(t); len(keys) != 0 {
				t.Fatalf("upload data left: %v", keys)
			}
		})
	}
}

func TestCancelUpload(t *testing.T) {
	for _, backend := range objectBackends {
		t.Run(backend, func(t *testing.T) {
			f := newBlobFixture(t, backend, Options{})
			ctx := context.Background()
			u, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.store.AppendUpload(ctx, u.Ref(), 0, bytes.NewReader(content(1))); err != nil {
				t.Fatal(err)
			}
			if err := f.store.CancelUpload(ctx, u.Ref()); err != nil {
				t.Fatal(err)
			}
			if err := f.store.CancelUpload(ctx, u.Ref()); !HasCode(err, CodeUploadUnknown) {
				t.Fatalf("second cancel: %v", err)
			}
			if _, err := f.store.AppendUpload(ctx, u.Ref(), int64(len(content(1))), bytes.NewReader(content(2))); !HasCode(err, CodeUploadUnknown) {
				t.Fatalf("append after cancel: %v", err)
			}
			if keys := f.objectKeys(t); len(keys) != 0 {
				t.Fatalf("objects left: %v", keys)
			}
		})
	}
}

func TestMaxBlobSize(t *testing.T) {
	t.Parallel()
	f := newBlobFixture(t, "mem", Options{MaxBlobSize: 1000})
	ctx := context.Background()
	if _, err := f.store.PutBlob(ctx, f.ref(uuid.Nil), bytes.NewReader(make([]byte, 1001)), Expected{Size: -1}); !HasCode(err, CodeBlobTooLarge) {
		t.Fatalf("too large: %v", err)
	}
	data := make([]byte, 1000)
	if _, err := f.store.PutBlob(ctx, f.ref(uuid.Nil), bytes.NewReader(data), want(data)); err != nil {
		t.Fatal(err)
	}
}

// TestQueueStatBlob: the batched stat fills the row of a stored blob and
// leaves nil, with no error from the batch, for one never pushed: an error
// would make pgx forget the batch's prepared statements, and every push
// begins with a HEAD of a blob the registry does not have.
func TestQueueStatBlob(t *testing.T) {
	f := newBlobFixture(t, "mem", Options{})
	ctx := context.Background()
	data := randomBytes(5000, 3)
	w := want(data)
	if _, err := f.store.PutBlob(ctx, f.ref(uuid.Nil), bytes.NewReader(data), w); err != nil {
		t.Fatal(err)
	}
	var found, missing *Blob
	var batch pgx.Batch
	f.store.QueueStatBlob(&batch, f.ns, w.SHA256, &found)
	f.store.QueueStatBlob(&batch, f.ns, [32]byte{9}, &missing)
	if err := f.pool.SendBatch(ctx, &batch).Close(); err != nil {
		t.Fatalf("batch with a missing blob: %v", err)
	}
	if found == nil || found.SHA256 != w.SHA256 || found.Size != int64(len(data)) {
		t.Fatalf("stored blob: %+v", found)
	}
	if missing != nil {
		t.Fatalf("blob never pushed: %+v", missing)
	}
}

// TestCommitAcceptsBlobInPlace: a commit whose upload file is gone because
// an earlier attempt renamed it to the blob's path and then failed to
// commit accepts the object there (verified bytes only ever reach a
// content-addressed path) and syncs it (objstore's TestPromoteFileSyncs
// checks SyncObject's syncs).
func TestCommitAcceptsBlobInPlace(t *testing.T) {
	ctx := context.Background()
	f := newBlobFixture(t, "file", Options{})
	data := randomBytes(70_000, 7)
	u, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.AppendUpload(ctx, u.Ref(), 0, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	root := strings.TrimPrefix(f.bucketURL, "file://")
	blobPath := filepath.Join(root, filepath.FromSlash(objstore.BlobKey(f.ns, sha256.Sum256(data))))
	if err := os.MkdirAll(filepath.Dir(blobPath), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, filepath.FromSlash(objstore.UploadKey(f.ns, u.UploadID))), blobPath); err != nil {
		t.Fatal(err)
	}
	res, err := f.store.CommitUpload(ctx, u.Ref(), nil, want(data))
	if err != nil || !res.Created {
		t.Fatalf("commit with the blob already in place: %+v %v", res, err)
	}
	r, _, err := f.store.OpenBlob(ctx, f.ns, res.Blob.SHA256, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (%v), equal %v", len(got), err, bytes.Equal(got, data))
	}
}

package objstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/uuid"
)

// backends opens each backend the upload tests run on, inside the subtest
// that uses it (a missing S3 server skips or fails only that subtest).
var backends = map[string]func(t *testing.T) *Store{
	"file": func(t *testing.T) *Store {
		fs, err := Open(context.Background(), "file://"+t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fs.Close() })
		return fs
	},
	"mem": func(*testing.T) *Store { return NewMem() },
	"s3":  func(t *testing.T) *Store { return newS3Bucket(t) },
	"gcs": newGCSBucket,
}

// randBytes returns n pseudo-random bytes, the same for the same seed.
// ChaCha8 fills the slice in blocks: a draw per byte took a tenth of this
// package's CPU under the race detector.
func randBytes(n int, seed uint64) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b) // never fails (math/rand/v2 docs)
	return b
}

// oneByteReader forces many small reads through the pipeline.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

func TestCopyHash(t *testing.T) {
	for _, n := range []int{0, 1, smallCopySize - 1, smallCopySize, smallCopySize + 1,
		copyBufSize - 1, copyBufSize, copyBufSize + 1, smallCopySize + copyBufSize, 5*copyBufSize + 12345} {
		data := randBytes(n, uint64(n))
		var dst bytes.Buffer
		h := sha256.New()
		got, err := CopyHash(&dst, bytes.NewReader(data), h, -1)
		if err != nil || got != int64(n) {
			t.Fatalf("n=%d: copied %d, %v", n, got, err)
		}
		if !bytes.Equal(dst.Bytes(), data) {
			t.Fatalf("n=%d: copy differs", n)
		}
		if want := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), want[:]) {
			t.Fatalf("n=%d: hash differs", n)
		}
	}
	// Small reads, limit exactly met, then exceeded.
	data := randBytes(3000, 7)
	h := sha256.New()
	var dst bytes.Buffer
	if _, err := CopyHash(&dst, oneByteReader{bytes.NewReader(data)}, h, 3000); err != nil {
		t.Fatal(err)
	}
	if want := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), want[:]) || !bytes.Equal(dst.Bytes(), data) {
		t.Fatal("small reads: copy or hash differs")
	}
	if _, err := CopyHash(io.Discard, bytes.NewReader(data), sha256.New(), 2999); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over limit: %v", err)
	}
	// A limit crossed past the small buffer, in the pipeline.
	long := randBytes(smallCopySize+copyBufSize, 8)
	if _, err := CopyHash(io.Discard, bytes.NewReader(long), sha256.New(), int64(len(long)-1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over limit past the small buffer: %v", err)
	}
	// A body cut short fails with its own error, whether it ends within the
	// small buffer or past it.
	for _, n := range []int{100, smallCopySize + 100} {
		cut := io.MultiReader(bytes.NewReader(randBytes(n, 9)), iotest.ErrReader(io.ErrUnexpectedEOF))
		if _, err := CopyHash(io.Discard, cut, sha256.New(), -1); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("n=%d: a body cut short: %v", n, err)
		}
	}
}

type failingWriter struct{ after int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("disk full")
	}
	f.after--
	return len(p), nil
}

func TestCopyHashWriteError(t *testing.T) {
	data := randBytes(20*copyBufSize, 1)
	for _, after := range []int{0, 3} { // the small buffer's write, a pipeline write
		_, err := CopyHash(&failingWriter{after: after}, bytes.NewReader(data), sha256.New(), -1)
		if err == nil || err.Error() != "disk full" {
			t.Fatalf("after %d writes: want the writer's error, got %v", after, err)
		}
	}
}

func TestKeys(t *testing.T) {
	ns := uuid.MustParse("018f4d6f-0e10-7e3a-9bfd-23a4c5d6e7f8")
	sum := sha256.Sum256([]byte("hello"))
	if got, want := BlobKey(ns, sum), "018f4d6f-0e10-7e3a-9bfd-23a4c5d6e7f8/blobs/sha256/2c/2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"; got != want {
		t.Fatalf("BlobKey = %s", got)
	}
	up := uuid.MustParse("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
	if got := UploadKey(ns, up); got != ns.String()+"/uploads/"+up.String() {
		t.Fatalf("UploadKey = %s", got)
	}
}

// TestUploadPromote writes an upload in three chunks (one of them rewritten
// after a simulated crash on the file backend), promotes it and reads it
// back through the bucket.
func TestUploadPromote(t *testing.T) {
	ctx := context.Background()
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ns, id := uuid.New(), uuid.New()
			data := randBytes(3*copyBufSize+777, 42)
			createUpload(t, s, ns, id)
			u, err := s.OpenUpload(ctx, ns, id)
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.New()
			cuts := []int{0, 1000, 2*copyBufSize + 5, len(data)}
			var parts []Part
			for i := 0; i+1 < len(cuts); i++ {
				p, err := u.Write(ctx, int64(cuts[i]), bytes.NewReader(data[cuts[i]:cuts[i+1]]), h, -1)
				if err != nil {
					t.Fatal(err)
				}
				if !s.IsFile() {
					parts = append(parts, p)
				}
			}
			if want := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), want[:]) {
				t.Fatal("hash differs")
			}
			// A stray part (a losing writer) must not end up in the blob.
			if !s.IsFile() {
				stray, err := u.Write(ctx, 1000, bytes.NewReader([]byte("garbage")), sha256.New(), -1)
				if err != nil {
					t.Fatal(err)
				}
				_ = stray
			}
			key := BlobKey(ns, sha256.Sum256(data))
			if err := u.Promote(ctx, parts, int64(len(data)), key); err != nil {
				t.Fatal(err)
			}
			u.Close()
			if err := s.DeleteUpload(ctx, ns, id); err != nil {
				t.Fatal(err)
			}
			got, err := s.Bucket().ReadAll(ctx, key)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read back: %v (equal=%v)", err, bytes.Equal(got, data))
			}
			r, err := s.NewRangeReader(ctx, key, 10, 20)
			if err != nil {
				t.Fatal(err)
			}
			part, _ := io.ReadAll(r)
			r.Close()
			if !bytes.Equal(part, data[10:30]) {
				t.Fatal("range read differs")
			}
			left := 0
			it := s.Bucket().List(nil)
			for {
				obj, err := it.Next(ctx)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if obj.Key != key && !strings.HasSuffix(obj.Key, "/uploads/") { // the S3 uploads marker stays
					left++
					t.Errorf("left behind: %s", obj.Key)
				}
			}
			if _, err := s.NewRangeReader(ctx, BlobKey(ns, [32]byte{}), 0, -1); !errors.Is(err, ErrNotFound) {
				t.Fatalf("missing object: %v", err)
			}
		})
	}
}

func TestFileUploadLock(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s1, err := Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	ns, id := uuid.New(), uuid.New()
	createUpload(t, s1, ns, id)
	u1, err := s1.OpenUpload(ctx, ns, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.OpenUpload(ctx, ns, id); !errors.Is(err, ErrBusy) {
		t.Fatalf("second writer: %v", err)
	}
	// Rename under the lock: a later opener must not get the blob file.
	if _, err := u1.Write(ctx, 0, bytes.NewReader([]byte("abc")), sha256.New(), -1); err != nil {
		t.Fatal(err)
	}
	if err := u1.Promote(ctx, nil, 3, BlobKey(ns, sha256.Sum256([]byte("abc")))); err != nil {
		t.Fatal(err)
	}
	u1.Close()
	if _, err := s2.OpenUpload(ctx, ns, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after promote: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, UploadKey(ns, id))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("upload file still there: %v", err)
	}
}

// createUpload creates an upload's temporary storage and closes it, for
// tests that open it again.
func createUpload(t *testing.T, s *Store, ns, id uuid.UUID) {
	t.Helper()
	u, err := s.CreateOpenUpload(context.Background(), ns, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
}

// The file backend keeps an upload's metadata as extended attributes of
// the upload file, which the rename carries to the blob; on a file system
// without them, in fileblob's sidecar. Either way Attributes reads it
// back, staged at creation or set at commit, nothing of the upload is
// left behind, and deleting the blob deletes its metadata.
func TestFileMetadata(t *testing.T) {
	ctx := context.Background()
	meta := map[string]string{"checksum-sha1": "0a4d55a8d778e5022fab701977c5d840bbc486d0"}
	for _, sidecar := range []bool{false, true} {
		for _, staged := range []bool{false, true} {
			t.Run(fmt.Sprintf("sidecar=%v/staged=%v", sidecar, staged), func(t *testing.T) {
				if sidecar {
					setMetadataOnFile = func(*os.File, map[string]string) error { return errNoXattrs }
					t.Cleanup(func() { setMetadataOnFile = setFileMetadata })
				}
				dir := t.TempDir()
				s, err := Open(ctx, "file://"+dir)
				if err != nil {
					t.Fatal(err)
				}
				ns, id := uuid.New(), uuid.New()
				var u *Upload
				if staged {
					u, err = s.CreateOpenUpload(ctx, ns, id, meta)
				} else {
					createUpload(t, s, ns, id)
					if u, err = s.OpenUpload(ctx, ns, id); err == nil {
						u.SetMetadata(meta)
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				data := []byte("hello")
				if _, err := u.Write(ctx, 0, bytes.NewReader(data), sha256.New(), -1); err != nil {
					t.Fatal(err)
				}
				key := BlobKey(ns, sha256.Sum256(data))
				if err := u.Promote(ctx, nil, int64(len(data)), key); err != nil {
					t.Fatal(err)
				}
				if err := u.Remove(ctx); err != nil {
					t.Fatal(err)
				}
				u.Close()
				a, err := s.Attributes(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if a.Metadata["checksum-sha1"] != meta["checksum-sha1"] || a.ContentType != contentType || a.Size != 5 {
					t.Fatalf("attributes: %+v", a)
				}
				_, err = os.Stat(s.path(key) + attrsSuffix)
				if hasSidecar := err == nil; hasSidecar != sidecar {
					t.Fatalf("sidecar present=%v (%v), want %v", hasSidecar, err, sidecar)
				}
				if left, _ := os.ReadDir(filepath.Join(dir, ns.String(), "uploads")); len(left) > 0 {
					t.Fatalf("upload left behind: %s", left[0].Name())
				}
				if err := s.Delete(ctx, key); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(s.path(key) + attrsSuffix); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("sidecar left after the delete: %v", err)
				}
			})
		}
	}
}

// Copying an object out with io.Copy uses a pooled buffer: the bucket
// reader's own WriteTo allocated 1 MiB per copy, whatever the object's size.
func TestRangeReaderCopyReusesBuffer(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	want := bytes.Repeat([]byte("tarball "), 512)
	if err := s.WriteAll(ctx, "k", want); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	copyOnce := func() {
		r, err := s.NewRangeReader(ctx, "k", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		out.Reset()
		// A writer without ReadFrom, as a response writer behind middleware.
		if _, err := io.Copy(struct{ io.Writer }{&out}, r); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	copyOnce()
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("copied %d bytes, want the %d written", out.Len(), len(want))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// Under the race detector sync.Pool drops a quarter of what it is
	// given, so a copy allocates a fresh buffer one time in four: about
	// 256 KiB per copy on average (0.25 +/- 0.04 MiB over 200 copies),
	// against more than 1 MiB each without the pool.
	const copies = 200
	for range copies {
		copyOnce()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / copies; per > 512<<10 {
		t.Fatalf("each copy allocated %d bytes; the 1 MiB copy buffer is not reused", per)
	}
}

// recordingWriter records the size of every write it is given.
type recordingWriter struct {
	bytes.Buffer
	sizes []int
	fail  int // fail the write at this index (-1: never)
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	if len(w.sizes) == w.fail {
		return 0, errors.New("disk full")
	}
	w.sizes = append(w.sizes, len(p))
	return w.Buffer.Write(p)
}

// An upload file is written fileWriteSize bytes at a time, whatever the
// size of the copy buffer, and a failed write stops the copy.
func TestPieceWriterSplitsWrites(t *testing.T) {
	data := randBytes(3*fileWriteSize+123, 9)
	w := &recordingWriter{fail: -1}
	n, err := CopyHash(pieceWriter{w}, bytes.NewReader(data), sha256.New(), -1)
	if err != nil || n != int64(len(data)) || !bytes.Equal(w.Bytes(), data) {
		t.Fatalf("copied %d bytes (%v), %d written equal: %v", n, err, w.Len(), bytes.Equal(w.Bytes(), data))
	}
	for _, s := range w.sizes {
		if s > fileWriteSize {
			t.Fatalf("a write of %d bytes, over %d: %v", s, fileWriteSize, w.sizes)
		}
	}
	failing := &recordingWriter{fail: 2}
	if n, err := (pieceWriter{failing}).Write(data); err == nil || n != 2*fileWriteSize {
		t.Fatalf("write failing at its third piece: %d bytes, %v", n, err)
	}
}

// TestPromoteFileSyncs checks the order of a file-backed promote's syncs:
// the upload file while it still has its upload path (its bytes reach the
// disk before any name points at them), then the blob's directory once
// the rename made the blob appear in it (so that the name does too), and
// the directories above it that the promote created. The blob row is
// committed after Promote returns. Sync syncs the upload file alone, and
// is a no-op where parts are objects; SyncObject syncs a blob in place.
// Seal does the upload file's part ahead, which the promote then skips
// unless the file changed or its size differs.
func TestPromoteFileSyncs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	ns := uuid.New()
	var synced []string
	var blobPath string // the blob of the promote under test
	orig := syncFile
	t.Cleanup(func() { syncFile = orig })
	record := func(f *os.File) error {
		_, statErr := os.Stat(blobPath)
		synced = append(synced, fmt.Sprintf("%s blob-present=%v", f.Name(), statErr == nil))
		return orig(f)
	}
	syncFile = record
	// written returns an open upload holding data, its file's path and
	// the blob key of data, which blobPath then names.
	written := func(data string, meta map[string]string) (u *Upload, upload, key string) {
		t.Helper()
		id := uuid.New()
		createUpload(t, s, ns, id)
		u, err := s.OpenUpload(ctx, ns, id)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { u.Close() })
		if meta != nil {
			u.SetMetadata(meta)
		}
		if _, err := u.Write(ctx, 0, strings.NewReader(data), sha256.New(), -1); err != nil {
			t.Fatal(err)
		}
		key = BlobKey(ns, sha256.Sum256([]byte(data)))
		blobPath = filepath.Join(dir, key)
		return u, filepath.Join(dir, UploadKey(ns, id)), key
	}
	// dirsUp is the syncs of the blob's directory and, when all, of each
	// directory above it up to the root.
	dirsUp := func(all bool) (syncs []string) {
		for d := filepath.Dir(blobPath); ; d = filepath.Dir(d) {
			syncs = append(syncs, d+" blob-present=true")
			if !all || d == dir {
				return syncs
			}
		}
	}
	// promote promotes u and checks its syncs: the files of want, then
	// the directories the promote changed.
	promote := func(u *Upload, key string, size int, want ...string) {
		t.Helper()
		_, err := os.Stat(filepath.Dir(blobPath))
		want = append(want, dirsUp(errors.Is(err, os.ErrNotExist))...)
		synced = nil
		if err := u.Promote(ctx, nil, int64(size), key); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(synced, want) {
			t.Fatalf("synced %q, want %q", synced, want)
		}
	}

	data := "durable bytes"
	u, upload, key := written(data, nil)
	if len(synced) != 0 {
		t.Fatalf("a write synced: %v", synced)
	}
	// What a chunk's append does before it records the upload's size.
	if err := u.Sync(); err != nil {
		t.Fatal(err)
	}
	if want := upload + " blob-present=false"; !slices.Equal(synced, []string{want}) {
		t.Fatalf("Sync synced %q, want %q", synced, want)
	}
	promote(u, key, len(data), upload+" blob-present=false")

	// Metadata kept in a sidecar (no extended attributes) is synced too,
	// before anything is renamed.
	setMetadataOnFile = func(*os.File, map[string]string) error { return errNoXattrs }
	t.Cleanup(func() { setMetadataOnFile = setFileMetadata })
	data = "bytes with a sidecar"
	u, upload, key = written(data, map[string]string{"checksum-sha1": "0a4d55a8d778e5022fab701977c5d840bbc486d0"})
	promote(u, key, len(data), upload+attrsSuffix+" blob-present=false", upload+" blob-present=false")

	// A second blob in the same directory syncs only that directory.
	for i := 0; ; i++ {
		data = fmt.Sprintf("neighbour %d", i)
		if k := BlobKey(ns, sha256.Sum256([]byte(data))); filepath.Dir(filepath.Join(dir, k)) == filepath.Dir(blobPath) {
			break
		}
	}
	u, upload, key = written(data, nil)
	promote(u, key, len(data), upload+" blob-present=false")

	// A sealed upload was synced ahead, its sidecar first: the promote
	// that follows renames and syncs the directories alone.
	data = "sealed bytes"
	u, upload, key = written(data, map[string]string{"checksum-sha1": "0a4d55a8d778e5022fab701977c5d840bbc486d0"})
	synced = nil
	if err := u.Seal(int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if want := []string{upload + attrsSuffix + " blob-present=false", upload + " blob-present=false"}; !slices.Equal(synced, want) {
		t.Fatalf("Seal synced %q, want %q", synced, want)
	}
	promote(u, key, len(data))
	if got, err := os.ReadFile(blobPath); err != nil || string(got) != data {
		t.Fatalf("sealed blob holds %q (%v), want %q", got, err, data)
	}

	// A write after the seal, or a promote of another size, syncs again.
	data = "sealed, then written"
	u, upload, _ = written("SEALED"+data[6:], nil)
	if err := u.Seal(int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Write(ctx, 0, strings.NewReader(data[:6]), sha256.New(), -1); err != nil {
		t.Fatal(err)
	}
	key = BlobKey(ns, sha256.Sum256([]byte(data)))
	blobPath = filepath.Join(dir, key)
	promote(u, key, len(data), upload+" blob-present=false")
	if got, err := os.ReadFile(blobPath); err != nil || string(got) != data {
		t.Fatalf("blob written after its seal holds %q (%v), want %q", got, err, data)
	}
	data = "sealed whole, promoted cut"
	u, upload, _ = written(data, nil)
	if err := u.Seal(int64(len(data))); err != nil {
		t.Fatal(err)
	}
	key = BlobKey(ns, sha256.Sum256([]byte(data[:6])))
	blobPath = filepath.Join(dir, key)
	promote(u, key, 6, upload+" blob-present=false")
	if got, err := os.ReadFile(blobPath); err != nil || string(got) != data[:6] {
		t.Fatalf("blob promoted shorter than its seal holds %q (%v), want %q", got, err, data[:6])
	}

	// An object already in place (a retry accepting what an earlier
	// attempt renamed) is synced with every directory up to the root.
	synced = nil
	if err := s.SyncObject(key); err != nil {
		t.Fatal(err)
	}
	if want := append([]string{blobPath + " blob-present=true"}, dirsUp(true)...); !slices.Equal(synced, want) {
		t.Fatalf("SyncObject synced %q, want %q", synced, want)
	}

	// A failing sync fails the promote, and the blob does not appear.
	syncFile = func(*os.File) error { return errors.New("I/O error") }
	data = "bytes that fail to sync"
	u, _, key = written(data, nil)
	if err := u.Promote(ctx, nil, int64(len(data)), key); err == nil || !strings.Contains(err.Error(), "I/O error") {
		t.Fatalf("promote with a failing sync: %v", err)
	}
	if _, err := os.Stat(blobPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("blob appeared although its bytes were not synced: %v", err)
	}

	// So does a failed seal: the promote after it syncs the file itself.
	data = "bytes whose seal fails"
	u, upload, key = written(data, nil)
	if err := u.Seal(int64(len(data))); err == nil || !strings.Contains(err.Error(), "I/O error") {
		t.Fatalf("seal with a failing sync: %v", err)
	}
	syncFile = record
	promote(u, key, len(data), upload+" blob-present=false")
}

func TestUploadSyncOnObjects(t *testing.T) {
	s, err := Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.CreateOpenUpload(context.Background(), uuid.New(), uuid.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if err := u.Sync(); err != nil {
		t.Fatalf("Sync on the mem backend: %v", err)
	}
	if err := s.SyncObject("no/such/key"); err != nil {
		t.Fatalf("SyncObject on the mem backend: %v", err)
	}
}

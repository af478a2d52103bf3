package store

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// A supplied SHA-1 is stored with the object as metadata (SHA1MetadataKey)
// whatever the path that placed it: monolithic PutBlob (rename on the file
// backend, single-part copy elsewhere), a resumable upload committed
// without a final chunk from one part or from several (compose); without a
// SHA-1 the object has none. Deleting the object removes its metadata too.
func TestBlobSHA1Metadata(t *testing.T) {
	for _, backend := range objectBackends {
		t.Run(backend, func(t *testing.T) {
			f := newBlobFixture(t, backend, Options{})
			ctx := context.Background()
			withSHA1 := func(data []byte) Expected {
				w := want(data)
				s := sha1.Sum(data)
				w.SHA1 = &s
				return w
			}
			check := func(what string, b *Blob, data []byte, present bool) {
				t.Helper()
				attrs, err := f.objects.Attributes(ctx, b.ObjectStorageKey)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				s := sha1.Sum(data)
				got, ok := attrs.Metadata[SHA1MetadataKey]
				if ok != present || (present && got != hex.EncodeToString(s[:])) {
					t.Fatalf("%s: metadata %v, want sha1 present=%v (%x)", what, attrs.Metadata, present, s)
				}
				if attrs.ContentType != "application/octet-stream" {
					t.Fatalf("%s: content type %q", what, attrs.ContentType)
				}
			}
			resumable := func(data []byte, chunks int) *Blob {
				t.Helper()
				u, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable)
				if err != nil {
					t.Fatal(err)
				}
				step := len(data) / chunks
				for off := 0; off < len(data); off += step {
					end := min(off+step, len(data))
					if _, err := f.store.AppendUpload(ctx, u.Ref(), int64(off), bytes.NewReader(data[off:end])); err != nil {
						t.Fatal(err)
					}
				}
				res, err := f.store.CommitUpload(ctx, u.Ref(), nil, withSHA1(data))
				if err != nil {
					t.Fatal(err)
				}
				return res.Blob
			}

			mono := randomBytes(100_000, 41)
			res, err := f.store.PutBlob(ctx, f.ref(uuid.Nil), bytes.NewReader(mono), withSHA1(mono))
			if err != nil {
				t.Fatal(err)
			}
			check("monolithic", res.Blob, mono, true)

			one := randomBytes(50_000, 42)
			check("resumable, one part", resumable(one, 1), one, true)
			three := randomBytes(90_000, 43)
			check("resumable, three parts", resumable(three, 3), three, true)

			plain := randomBytes(20_000, 44)
			check("no sha1", f.put(t, plain).Blob, plain, false)

			if err := f.objects.Delete(ctx, res.Blob.ObjectStorageKey); err != nil {
				t.Fatal(err)
			}
			if backend == "file" {
				root := strings.TrimPrefix(f.bucketURL, "file://")
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(res.Blob.ObjectStorageKey)) + ".attrs"); !os.IsNotExist(err) {
					t.Fatalf("attributes left after the delete: %v", err)
				}
			}
		})
	}
}

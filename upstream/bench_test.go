package upstream

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
)

// The fill benchmarks fetch one 64 MiB body from a loopback server, as a
// fill (spooled, hashed, staged) and as a plain GET copied to io.Discard,
// so the fill's cost over the network copy shows as the MB/s ratio (with
// 16 readers, MB/s counts the body once: the bytes delivered are 16 times
// that):
//
//	go test -run '^$' -bench 'Fill|PlainCopy' -benchtime 10x -count 5 ./upstream/
const benchSize = 64 << 20

func benchServer(b *testing.B) (*blobServer, string) {
	body := randomBytes(benchSize, 99)
	srv := newBlobServer(body)
	up := serve(b, srv)
	return srv, up.URL
}

// BenchmarkPlainCopy: http GET + io.Copy to io.Discard, the floor.
func BenchmarkPlainCopy(b *testing.B) {
	srv, url := benchServer(b)
	b.SetBytes(benchSize)
	for b.Loop() {
		resp, err := http.Get(url + srv.path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}

// BenchmarkPlainCopySHA256: the same with the sha256 every OCI client
// computes anyway.
func BenchmarkPlainCopySHA256(b *testing.B) {
	srv, url := benchServer(b)
	b.SetBytes(benchSize)
	for b.Loop() {
		resp, err := http.Get(url + srv.path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(sha256.New(), resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}

// discardStage reads the stage's stream to the end and commits nothing
// anywhere: the fill's own cost without a store's.
func discardStage(_ context.Context, body io.Reader) (Staged, error) {
	if _, err := io.Copy(io.Discard, body); err != nil {
		return nil, err
	}
	return nopStaged{}, nil
}

type nopStaged struct{}

func (nopStaged) Commit(context.Context, *FillResult) error { return nil }
func (nopStaged) Discard(context.Context)                   {}

// BenchmarkFill: one client reading a fill that verifies sha256, spools
// to a file and feeds a stage, to the commit.
func BenchmarkFill(b *testing.B) {
	for _, readers := range []int{1, 16} {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) {
			srv, url := benchServer(b)
			c := newTestClient(b, Config{URL: url})
			d := sha256Digest(srv.body)
			b.SetBytes(benchSize)
			i := 0
			for b.Loop() {
				i++
				key := fmt.Sprintf("k%d", i)
				var wg sync.WaitGroup
				for range readers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r, err := c.Fill(context.Background(), FillRequest{Key: key, Request: Request{Path: srv.path},
							Expect: Expect{Size: benchSize, Digests: []Digest{d}}, Stage: discardStage})
						if err != nil {
							b.Error(err)
							return
						}
						defer r.Close()
						if _, err := io.Copy(io.Discard, r); err != nil {
							b.Error(err)
						}
						if _, err := r.Wait(context.Background()); err != nil {
							b.Error(err)
						}
					}()
				}
				wg.Wait()
			}
		})
	}
}

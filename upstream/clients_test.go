package upstream

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestClientsCloseWaitsForReplacedClients: a client replaced by newer
// settings closes in the background once its fills are done; Clients.Close
// (shutdown) waits for that too, so a fill a request started is never cut
// off by the exit, whichever client it runs on.
func TestClientsCloseWaitsForReplacedClients(t *testing.T) {
	body := randomBytes(1<<20, 11)
	srv := newBlobServer(body)
	unblock := make(chan struct{})
	var release sync.Once
	srv.hold = func(http.ResponseWriter) { <-unblock }
	up := serve(t, srv)
	// Before the server's cleanup, which waits for the held response.
	t.Cleanup(func() { release.Do(func() { close(unblock) }) })
	var cs Clients
	build := func() (*Client, error) { return New(Config{URL: up.URL, SpoolDir: t.TempDir()}) }
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	old, err := cs.Get("remote", t0, build)
	if err != nil {
		t.Fatal(err)
	}
	stage := newMemStage()
	key, req := blobRequest(body)
	r, err := old.Fill(context.Background(), FillRequest{Key: key, Request: req, Expect: Expect{Size: -1, Digests: []Digest{sha256Digest(body)}}, Stage: stage.stage})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := cs.Get("remote", t0.Add(time.Second), build); err != nil {
		t.Fatal(err)
	}

	closed := make(chan struct{})
	go func() {
		cs.Close(context.Background())
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while the replaced client's fill was in flight")
	case <-time.After(200 * time.Millisecond):
	}
	release.Do(func() { close(unblock) })
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return once the fill was done")
	}
	if committed, _ := stage.snapshot(); len(committed) != 1 {
		t.Fatalf("fills committed: %d, want 1", len(committed))
	}
}

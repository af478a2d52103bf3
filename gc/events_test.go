package gc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/artifact-registry/artifact-registry/store"
)

// syncBuffer is an io.Writer that cleanup workers may share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// deleteEvents parses the JSON log and returns the gc.object_deleted
// events by digest.
func (b *syncBuffer) deleteEvents(t *testing.T) map[string][]map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string][]map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if rec["event"] != "gc.object_deleted" {
			continue
		}
		d, _ := rec["digest"].(string)
		out[d] = append(out[d], rec)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestObjectDeleteEventPerIrreversibleDelete: GC keeps a forensic trail
// of every irreversible delete (docs/garbage-collection.md "Operational
// controls"). Each storage delete of gc:cleanup
// emits exactly one structured gc.object_deleted event carrying the
// namespace, digest and size, also when the transaction then fails (the
// bytes are gone either way); stopped, referenced and phase-2 cleanups emit
// none.
func TestObjectDeleteEventPerIrreversibleDelete(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	e := newEnv(t, Config{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	gone1 := blobData("event-gone-1", 3000)
	gone2 := blobData("event-gone-2", 4100)
	crashed := blobData("event-crashed", 5200)
	kept := blobData("event-kept", 6300)
	e.mustDetach(e.mustPush(gone1)...)
	e.mustDetach(e.mustPush(gone2)...)
	e.mustDetach(e.mustPush(crashed)...)
	keptAtt := e.mustPush(kept)
	e.mustDetach(keptAtt...)
	e.pastDelayAndGrace()
	digest := func(b []byte) string { return store.FormatSHA256(sha256.Sum256(b)) }

	// Kill switch off: nothing deleted, no event.
	if _, err := e.st.SetGCReclaim(e.ctx, false, "alice", "audit"); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{gone1, gone2, crashed, kept} {
		if out, err := e.g.Cleanup(e.ctx, e.key(b)); err != nil || out.Outcome != store.GCDeleteStopped {
			t.Fatalf("cleanup with the switch off: %v %v", out, err)
		}
	}
	if ev := logs.deleteEvents(t); len(ev) != 0 {
		t.Fatalf("delete events while the switch was off: %v", ev)
	}
	if _, err := e.st.SetGCReclaim(e.ctx, true, "alice", "audit done"); err != nil {
		t.Fatal(err)
	}

	// A re-reference before cleanup (the attach clears the candidate): no
	// delete, no event.
	e.mustPush(kept)
	if out, err := e.g.Cleanup(e.ctx, e.key(kept)); err != nil || (out.Outcome != store.GCCandidateGone && out.Outcome != store.GCReferenced) {
		t.Fatalf("cleanup of a re-referenced blob: %v %v", out, err)
	}

	// A crash after the storage delete: the event is already out.
	errCrash := errors.New("simulated crash")
	e.g.afterObjectDelete = func(context.Context, *store.Blob) error { return errCrash }
	if _, err := e.g.Cleanup(e.ctx, e.key(crashed)); !errors.Is(err, errCrash) {
		t.Fatalf("cleanup with a crash: %v", err)
	}
	e.g.afterObjectDelete = nil
	if n := len(logs.deleteEvents(t)[digest(crashed)]); n != 1 {
		t.Fatalf("%d delete events for the crashed cleanup, want 1", n)
	}

	if out := e.runGC(); out[store.GCReclaimed] != 3 {
		t.Fatalf("outcomes %v, want three reclaimed", out)
	}
	ev := logs.deleteEvents(t)
	want := map[string]int{digest(gone1): 1, digest(gone2): 1, digest(crashed): 2}
	for _, b := range [][]byte{gone1, gone2, crashed} {
		e.assertGone(b)
		d := digest(b)
		if len(ev[d]) != want[d] {
			t.Fatalf("%s: %d delete events, want %d", d, len(ev[d]), want[d])
		}
		for _, rec := range ev[d] {
			if rec["namespace_id"] != e.ns.String() {
				t.Fatalf("%s: event namespace %v, want %s", d, rec["namespace_id"], e.ns)
			}
			if size, _ := rec["size"].(float64); int(size) != len(b) {
				t.Fatalf("%s: event size %v, want %d", d, rec["size"], len(b))
			}
			if rec["level"] != "INFO" || rec["component"] != "gc" {
				t.Fatalf("%s: event %v", d, rec)
			}
		}
	}
	if n := len(ev[digest(kept)]); n != 0 {
		t.Fatalf("%d delete events for a blob that was kept", n)
	}
	e.assertIntact(kept)
	if len(ev) != 3 {
		t.Fatalf("delete events for %d digests, want 3: %v", len(ev), ev)
	}
}

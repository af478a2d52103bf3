package store

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// TestSigningKeysFirstUseRace starts eight "instances" (Stores over one
// database) that all find no key and create one at once: they must all end
// with the same single current key.
func TestSigningKeysFirstUseRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	const instances = 8
	ids := make([]int64, instances)
	keys := make([][]byte, instances)
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, instances)
	for i := range instances {
		st := New(pool, objstore.NewMem(), Options{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got, err := st.SigningKeys(ctx)
			if err != nil {
				errs <- err
				return
			}
			ids[i], keys[i] = got[0].ID, got[0].Key
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := 1; i < instances; i++ {
		if ids[i] != ids[0] || !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("instance %d got key %d, instance 0 key %d", i, ids[i], ids[0])
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM token_signing_keys`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 || len(keys[0]) != SigningKeySize || bytes.Equal(keys[0], make([]byte, SigningKeySize)) {
		t.Fatalf("%d keys stored, key of %d bytes", n, len(keys[0]))
	}
}

// TestRotateSigningKey: a rotation makes a new key current and keeps the
// previous one (retired) until the retention has passed since it was
// retired; concurrent rotations leave exactly one current key.
func TestRotateSigningKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newFakeClock()
	st := New(testdb.New(t), objstore.NewMem(), Options{Clock: clock})
	first, err := st.SigningKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const retention = 10 * time.Minute

	clock.Advance(time.Minute)
	second, err := st.RotateSigningKey(ctx, retention)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := st.SigningKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0].ID != second.ID || !keys[0].Current() ||
		keys[1].ID != first[0].ID || keys[1].RetiredAt == nil || !keys[1].RetiredAt.Equal(clock.Now()) {
		t.Fatalf("after one rotation: %+v", keys)
	}
	if bytes.Equal(keys[0].Key, keys[1].Key) {
		t.Fatal("the rotated key equals the previous one")
	}

	// Within the retention the first key stays; past it the next rotation
	// deletes it.
	clock.Advance(retention - time.Second)
	third, err := st.RotateSigningKey(ctx, retention)
	if err != nil {
		t.Fatal(err)
	}
	if keys, _ = st.SigningKeys(ctx); len(keys) != 3 {
		t.Fatalf("within the retention: %d keys, want 3", len(keys))
	}
	clock.Advance(2 * time.Second)
	if n, err := st.DeleteRetiredSigningKeys(ctx, clock.Now().Add(-retention)); err != nil || n != 1 {
		t.Fatalf("DeleteRetiredSigningKeys: %d, %v; want 1", n, err)
	}
	keys, _ = st.SigningKeys(ctx)
	if len(keys) != 2 || keys[0].ID != third.ID || keys[1].ID != second.ID {
		t.Fatalf("after the retention: %+v", keys)
	}

	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := st.RotateSigningKey(ctx, retention); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	keys, _ = st.SigningKeys(ctx)
	current := 0
	for _, k := range keys {
		if k.Current() {
			current++
		}
	}
	if current != 1 || len(keys) != 6 {
		t.Fatalf("after 4 concurrent rotations: %d current of %d keys, want 1 of 6", current, len(keys))
	}
}

package upstream

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Clients keeps the Client of each remote of a protocol, keyed by the
// remote's id and rebuilt when the remote's settings change (the time
// they last changed, read with the remote on every request, so that a
// change made through any instance applies to the next request here).
// Concurrent first requests of a remote build one client.
type Clients struct {
	mu      sync.Mutex
	clients map[string]*keptClient
	builds  singleflight.Group
	// replaced counts the replaced clients still closing in the
	// background, which Close waits for too.
	replaced sync.WaitGroup
}

type keptClient struct {
	changedAt time.Time
	c         *Client
}

// Get returns the client of remote id for settings changed at changedAt,
// building it with build when there is none or it is older. A replaced
// client is closed in the background once its fills are done (bounded).
func (cs *Clients) Get(id string, changedAt time.Time, build func() (*Client, error)) (*Client, error) {
	cs.mu.Lock()
	if cs.clients == nil {
		cs.clients = map[string]*keptClient{}
	}
	kc := cs.clients[id]
	cs.mu.Unlock()
	if kc != nil && kc.changedAt.Equal(changedAt) {
		return kc.c, nil
	}
	v, err, _ := cs.builds.Do(id+"/"+changedAt.String(), func() (any, error) {
		cs.mu.Lock()
		if kc := cs.clients[id]; kc != nil && kc.changedAt.Equal(changedAt) {
			cs.mu.Unlock()
			return kc.c, nil
		}
		cs.mu.Unlock()
		c, err := build()
		if err != nil {
			return nil, err
		}
		cs.mu.Lock()
		old := cs.clients[id]
		if old != nil && old.changedAt.After(changedAt) {
			cs.mu.Unlock()
			cs.replaced.Go(func() { closeBounded(c) })
			return old.c, nil
		}
		cs.clients[id] = &keptClient{changedAt: changedAt, c: c}
		cs.mu.Unlock()
		if old != nil {
			cs.replaced.Go(func() { closeBounded(old.c) })
		}
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Client), nil
}

// Close closes every client (at shutdown), waiting for fills in flight,
// those of replaced clients included, until ctx ends.
func (cs *Clients) Close(ctx context.Context) {
	cs.mu.Lock()
	all := cs.clients
	cs.clients = nil
	cs.mu.Unlock()
	for _, kc := range all {
		_ = kc.c.Close(ctx)
	}
	done := make(chan struct{})
	go func() { cs.replaced.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func closeBounded(c *Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_ = c.Close(ctx)
}

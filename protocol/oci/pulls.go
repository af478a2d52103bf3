package oci

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/artifact-registry/artifact-registry/store/container"
)

// pullRecorder records image pulls (buffered counters) off the request
// path: a manifest GET hands its pull to a bounded queue, and one goroutine
// writes the queue to the store in batches (at most every flushEvery, or
// when maxBatch pulls are waiting). When the queue is full, pulls are
// dropped and counted: download counts are statistics, and a pull must
// never wait for them. Pulls still queued when the process dies are lost.
type pullRecorder struct {
	st      *container.Store
	log     *slog.Logger
	ch      chan container.Pull
	dropped atomic.Int64
}

const (
	pullQueue      = 4096
	pullMaxBatch   = 256
	pullFlushEvery = 500 * time.Millisecond
)

func newPullRecorder(st *container.Store, log *slog.Logger) *pullRecorder {
	p := &pullRecorder{st: st, log: log, ch: make(chan container.Pull, pullQueue)}
	go p.run()
	return p
}

func (p *pullRecorder) record(pull container.Pull) {
	select {
	case p.ch <- pull:
	default:
		if p.dropped.Add(1)%1000 == 1 {
			p.log.Warn("oci: pull counter queue full, pulls not counted", "dropped", p.dropped.Load())
		}
	}
}

func (p *pullRecorder) run() {
	batch := make([]container.Pull, 0, pullMaxBatch)
	tick := time.NewTicker(pullFlushEvery)
	defer tick.Stop()
	flush := func() {
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := p.st.RecordPulls(ctx, batch); err != nil {
			p.log.Warn("oci: pull counters not recorded", "pulls", len(batch), "err", err)
		}
		cancel()
		batch = batch[:0]
	}
	for {
		select {
		case pull := <-p.ch:
			batch = append(batch, pull)
			if len(batch) >= pullMaxBatch {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
}

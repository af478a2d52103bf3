package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sort"
	"sync"
	"time"
)

// Run sets up a namespace, runs the workload and the faults for
// cfg.Duration, reads every acknowledged write back and reports. The
// error is for a run that could not take place (setup failed); what the
// registry did wrong is in the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	base, err := url.Parse(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("base URL %q: %w", cfg.BaseURL, err)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed>>1|1))
	admin := newClient(base, cfg.AdminToken, 1, cfg.RequestTimeout)
	l, err := setup(ctx, admin, fmt.Sprintf("soak-%x", rng.Uint32()))
	if err != nil {
		return nil, err
	}
	cl := newClient(base, l.token, cfg.Workers, cfg.RequestTimeout)
	rec := &recorder{}
	acks := newAckLog()

	start := time.Now()
	runCtx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	var wg sync.WaitGroup
	for _, f := range cfg.Faults {
		wg.Go(func() { runFault(ctx, runCtx, f, rec) })
	}
	ops := weighted(cfg.Mix)
	for i := range cfg.Workers {
		w := &worker{id: i, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(i))), cl: cl, l: l, acks: acks}
		wg.Go(func() { work(runCtx, w, ops, rec) })
	}
	wg.Wait()
	elapsed := time.Since(start)

	lost := verify(ctx, cl, acks.all(), cfg.Workers, cfg.VerifyTimeout)
	return newReport(cfg, elapsed, rec, acks.counts(), lost), nil
}

// weighted expands the mix into a list to draw from uniformly, in a fixed
// order so that a seed replays the same run.
func weighted(mix map[string]int) []string {
	names := make([]string, 0, len(mix))
	for op := range mix {
		names = append(names, op)
	}
	sort.Strings(names)
	var out []string
	for _, op := range names {
		for range mix[op] {
			out = append(out, op)
		}
	}
	return out
}

// work sends operations until the run ends; an operation cut short by the
// end of the run is not counted.
func work(ctx context.Context, w *worker, ops []string, rec *recorder) {
	for ctx.Err() == nil {
		op := ops[w.rng.IntN(len(ops))]
		s := sample{op: op, start: time.Now(), label: "ok"}
		err := w.run(ctx, op)
		s.end = time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.label, s.detail = labelOf(err), err.Error()
		}
		rec.record(s)
		if err != nil {
			select {
			case <-time.After(pause(err)):
			case <-ctx.Done():
			}
		}
	}
}

// runFault waits for the fault's time, injects it, holds it and heals it;
// healing runs on the outer context so that the end of the workload does
// not leave the deployment broken.
func runFault(ctx, runCtx context.Context, f Fault, rec *recorder) {
	select {
	case <-time.After(f.At):
	case <-runCtx.Done():
		rec.window(Window{Kind: f.Kind, Err: "not started before the run ended"})
		return
	}
	w := Window{Kind: f.Kind, Start: time.Now()}
	var errs []error
	if err := f.Inject(ctx); err != nil {
		errs = append(errs, fmt.Errorf("inject: %w", err))
	}
	select {
	case <-time.After(f.Hold):
	case <-ctx.Done():
	}
	if err := f.Heal(ctx); err != nil {
		errs = append(errs, fmt.Errorf("heal: %w", err))
	}
	w.End = time.Now()
	if err := errors.Join(errs...); err != nil {
		w.Err = err.Error()
	}
	rec.window(w)
}

// LostWrite is an acknowledged write that could not be read back.
type LostWrite struct {
	Kind, Name, Reason string
}

// verify reads every acknowledged write back. The registry is whole again
// by now, but a read that meets unavailability is retried until timeout;
// a missing or different write is retried a few times, then lost.
func verify(ctx context.Context, cl *client, acks []Ack, workers int, timeout time.Duration) []LostWrite {
	deadline := time.Now().Add(timeout)
	var (
		mu   sync.Mutex
		lost []LostWrite
		wg   sync.WaitGroup
	)
	next := make(chan Ack)
	for range workers {
		wg.Go(func() {
			for a := range next {
				if err := verifyOne(ctx, cl, a, deadline); err != nil {
					mu.Lock()
					lost = append(lost, LostWrite{Kind: a.Kind, Name: a.Name, Reason: err.Error()})
					mu.Unlock()
				}
			}
		})
	}
	for _, a := range acks {
		next <- a
	}
	close(next)
	wg.Wait()
	sort.Slice(lost, func(i, j int) bool { return lost[i].Kind+lost[i].Name < lost[j].Kind+lost[j].Name })
	return lost
}

func verifyOne(ctx context.Context, cl *client, a Ack, deadline time.Time) error {
	for _, ch := range a.Checks {
		for attempt := 1; ; attempt++ {
			err := ch.run(ctx, cl)
			if err == nil {
				break
			}
			definite := labelOf(err) == "404" || labelOf(err) == "mismatch"
			if (definite && attempt >= 3) || time.Now().After(deadline) || ctx.Err() != nil {
				return err
			}
			time.Sleep(time.Second)
		}
	}
	return nil
}

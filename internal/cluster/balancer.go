package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// healthInterval is how often the balancer probes each instance's
// /-/ready, as a load balancer's health check would.
const healthInterval = 200 * time.Millisecond

// balancer is a round-robin reverse proxy over the instances. It streams
// both ways (no buffering) and keeps the client's Host header, so the
// instances see the public host. Unless dumb, it sends requests only to
// instances whose last health check passed.
type balancer struct {
	backends []*backend
	next     atomic.Uint64
	dumb     bool

	srv    *http.Server
	ln     net.Listener
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type backend struct {
	proxy    *httputil.ReverseProxy
	up       atomic.Bool
	requests atomic.Int64
}

func newBalancer(dumb bool) (*balancer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("balancer: listen: %w", err)
	}
	b := &balancer{ln: ln, dumb: dumb}
	b.srv = &http.Server{Handler: b, ReadHeaderTimeout: 30 * time.Second}
	return b, nil
}

func (b *balancer) url() string { return "http://" + b.ln.Addr().String() }

// add registers an instance; call before serve.
func (b *balancer) add(target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("balancer: target %q: %w", target, err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	tr.DisableCompression = true
	be := &backend{}
	be.up.Store(b.dumb)
	be.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host
			r.SetXForwarded()
		},
		Transport:     tr,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "bad gateway: "+err.Error(), http.StatusBadGateway)
		},
	}
	b.backends = append(b.backends, be)
	return nil
}

// serve starts accepting and, unless dumb, health checking targets.
func (b *balancer) serve(targets []string) {
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	if !b.dumb {
		for i, t := range targets {
			b.wg.Add(1)
			go b.check(ctx, b.backends[i], t+"/-/ready")
		}
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := b.srv.Serve(b.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(fmt.Sprintf("cluster balancer: %v", err))
		}
	}()
}

func (b *balancer) check(ctx context.Context, be *backend, url string) {
	defer b.wg.Done()
	client := &http.Client{Timeout: time.Second}
	t := time.NewTicker(healthInterval)
	defer t.Stop()
	for {
		ok, _ := probe(ctx, client, url)
		be.up.Store(ok)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (b *balancer) close() {
	if b.cancel != nil {
		b.cancel()
	}
	_ = b.srv.Close()
	b.wg.Wait()
}

// ServeHTTP sends r to the next instance in turn that is up; with none up
// it answers 503 with Retry-After, as a load balancer without healthy
// targets does.
func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := uint64(len(b.backends))
	start := b.next.Add(1)
	for k := range n {
		be := b.backends[(start+k)%n]
		if be.up.Load() {
			be.requests.Add(1)
			be.proxy.ServeHTTP(w, r)
			return
		}
	}
	w.Header().Set("Retry-After", "1")
	http.Error(w, "no instance is ready", http.StatusServiceUnavailable)
}

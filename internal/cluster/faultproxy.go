package cluster

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Storage fault modes of the proxy between the instances and S3.
const (
	storageOK    int32 = iota
	storageReset       // connections are reset at once
	storageHang        // connections are accepted and never answered
)

// faultProxy is a TCP proxy in front of the S3 server that can be switched
// to fail: what an object store outage looks like to the instances.
type faultProxy struct {
	ln     net.Listener
	target string
	mode   atomic.Int32

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newFaultProxy(target string) (*faultProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("storage proxy: listen: %w", err)
	}
	p := &faultProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *faultProxy) addr() string { return p.ln.Addr().String() }

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		switch p.mode.Load() {
		case storageReset:
			reset(c)
			continue
		case storageHang:
			p.track(c)
			continue
		}
		s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			reset(c)
			continue
		}
		p.track(c)
		p.track(s)
		if p.mode.Load() != storageOK {
			// A fault began while dialing; dropAll may have missed this pair.
			p.untrack(c)
			p.untrack(s)
			reset(c)
			reset(s)
			continue
		}
		p.wg.Add(2)
		go p.pipe(s, c)
		go p.pipe(c, s)
	}
}

func (p *faultProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	p.untrack(src)
	_ = src.Close()
}

func (p *faultProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns[c] = struct{}{}
	p.mu.Unlock()
}

func (p *faultProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// setMode switches the proxy; a fault also resets every open connection,
// so requests in flight fail too.
func (p *faultProxy) setMode(m int32) {
	if p.mode.Swap(m) != m {
		p.dropAll()
	}
}

// dropAll resets every tracked connection: in flight ones when a fault
// starts, hanging ones when it ends.
func (p *faultProxy) dropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		reset(c)
		delete(p.conns, c)
	}
}

func (p *faultProxy) close() {
	_ = p.ln.Close()
	p.dropAll()
	p.wg.Wait()
}

// reset closes c with an RST instead of a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

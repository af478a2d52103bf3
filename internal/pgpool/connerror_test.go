package pgpool

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A server that goes away mid-conversation: the read reports ConnError
// around the socket's own EOF, so errors.Is(io.EOF) still holds.
func TestConnErrorOnServerLoss(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			_ = c.Close()
		}
	}()
	cfg := &pgconn.Config{}
	markConnErrors(cfg)
	c, err := cfg.DialFunc(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Read(make([]byte, 1))
	var lost *ConnError
	if !errors.As(err, &lost) || !errors.Is(err, io.EOF) {
		t.Fatalf("read from a closed server: %v (%T), want ConnError wrapping EOF", err, err)
	}
}

package benchcompare

import (
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestListenerPID(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pid, err := ListenerPID(ln.Addr().String())
	if err != nil || pid != os.Getpid() {
		t.Fatalf("ListenerPID = %d, %v; want %d", pid, err, os.Getpid())
	}
	addr := ln.Addr().String()
	ln.Close()
	if pid, err := ListenerPID(addr); err == nil {
		t.Fatalf("closed listener: pid %d, want an error", pid)
	}
}

// The high-water mark follows an allocation and falls back after a reset.
func TestPeakRSS(t *testing.T) {
	pid := os.Getpid()
	if err := ResetPeakRSS(pid); err != nil {
		t.Fatal(err)
	}
	before, err := PeakRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	const size = 256 << 20
	buf := make([]byte, size)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1 // touch every page so it is resident
	}
	peak, err := PeakRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	if peak < before+size*9/10 {
		t.Fatalf("peak %d after touching %d bytes, was %d", peak, size, before)
	}
	runtime.KeepAlive(buf)
	buf = nil
	debug.FreeOSMemory() // returns the freed pages, so RSS falls
	if err := ResetPeakRSS(pid); err != nil {
		t.Fatal(err)
	}
	after, err := PeakRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	if after >= peak-size/2 {
		t.Fatalf("peak %d after the reset, was %d with %d bytes resident", after, peak, size)
	}
}

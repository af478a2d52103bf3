package benchcompare

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The peak-RSS rows read a registry's own high-water mark around one
// workload: Linux keeps it per process (VmHWM) and resets it to the
// current RSS when "5" is written to the process's clear_refs, so the
// figure belongs to that workload and not to whatever ran before.

// ListenerPID returns the process listening on the TCP address addr
// (host:port), found through the socket's inode in /proc/net/tcp and the
// processes' descriptors.
func ListenerPID(addr string) (int, error) {
	inode, err := listenerInode(addr)
	if err != nil {
		return 0, err
	}
	target := fmt.Sprintf("socket:[%s]", inode)
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if link, err := os.Readlink(fd); err == nil && link == target {
			pid, err := strconv.Atoi(strings.Split(fd, "/")[2])
			if err == nil {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no process holds the socket listening on %s", addr)
}

// listenerInode finds the inode of the IPv4 socket listening on addr.
func listenerInode(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listener %q: %w", addr, err)
	}
	ip := net.ParseIP(host).To4()
	p, err := strconv.Atoi(port)
	if ip == nil || err != nil {
		return "", fmt.Errorf("listener %q: want an IPv4 host and a port", addr)
	}
	// /proc/net/tcp writes the address as the hex of its bytes in host
	// (little-endian) order, the port in big-endian hex.
	local := fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], p)
	raw, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return "", fmt.Errorf("read /proc/net/tcp: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// local_address is field 1, st field 3 (0A is LISTEN), inode 9.
		if len(f) > 9 && f[1] == local && f[3] == "0A" {
			return f[9], nil
		}
	}
	return "", fmt.Errorf("nothing listens on %s", addr)
}

// ResetPeakRSS sets pid's high-water mark to its current RSS.
func ResetPeakRSS(pid int) error {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return fmt.Errorf("reset peak RSS of %d: %w", pid, err)
	}
	return nil
}

// PeakRSS returns pid's high-water mark of resident memory in bytes.
func PeakRSS(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("peak RSS of %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("peak RSS of %d: %q: %w", pid, line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("peak RSS of %d: no VmHWM line", pid)
}

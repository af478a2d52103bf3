package soak

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"net/http"
	"sync"
)

// Ack is one write the registry acknowledged, with the reads that prove
// it is still there.
type Ack struct {
	Kind   string // "oci", "npm" or "maven"
	Name   string
	Checks []Check
}

// Check is one read of an acknowledged write: GET Path answers 200 and its
// body has SHA256 (hex, when set) and contains Contains (when set).
type Check struct {
	Path     string
	SHA256   string
	Contains string
}

// run reads the check back; the error labels what was wrong.
func (ch Check) run(ctx context.Context, c *client) error {
	r, err := c.do(ctx, http.MethodGet, ch.Path, nil, []int{http.StatusOK})
	if err != nil {
		return err
	}
	if ch.SHA256 != "" {
		if s := sha256.Sum256(r.body); hex.EncodeToString(s[:]) != ch.SHA256 {
			return fail("mismatch", "GET %s: sha256 %x, want %s", ch.Path, s, ch.SHA256)
		}
	}
	if ch.Contains != "" && !bytes.Contains(r.body, []byte(ch.Contains)) {
		return fail("mismatch", "GET %s: body lacks %q", ch.Path, ch.Contains)
	}
	return nil
}

// ackLog holds every acknowledged write, by kind.
type ackLog struct {
	mu     sync.Mutex
	byKind map[string][]Ack
}

func newAckLog() *ackLog { return &ackLog{byKind: map[string][]Ack{}} }

func (l *ackLog) add(a Ack) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byKind[a.Kind] = append(l.byKind[a.Kind], a)
}

// pick is a random acknowledged write of the kind; ok false while there
// is none.
func (l *ackLog) pick(rng *rand.Rand, kind string) (Ack, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	acks := l.byKind[kind]
	if len(acks) == 0 {
		return Ack{}, false
	}
	return acks[rng.IntN(len(acks))], true
}

// all is every acknowledged write.
func (l *ackLog) all() []Ack {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Ack
	for _, acks := range l.byKind {
		out = append(out, acks...)
	}
	return out
}

// counts is the number of acknowledged writes by kind.
func (l *ackLog) counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for k, acks := range l.byKind {
		out[k] = len(acks)
	}
	return out
}

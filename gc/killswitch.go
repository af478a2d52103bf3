package gc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
)

// KillSwitch is the source of the operator kill switch of ADR-025: it
// stops every object deletion without a deploy. It is read before every
// delete; an error means the state is unknown, and GC then deletes
// nothing (fail-closed).
type KillSwitch interface {
	// ReclaimEnabled reports whether GC may delete objects, and who set
	// the switch last.
	ReclaimEnabled(ctx context.Context) (enabled bool, changedBy string, err error)
}

// StoreKillSwitch reads the switch from the database (store.GCReclaimSwitch,
// the gc_controls row), set through GraphQL setGarbageCollection.
type StoreKillSwitch struct{ Store *store.Store }

// ReclaimEnabled implements KillSwitch.
func (k StoreKillSwitch) ReclaimEnabled(ctx context.Context) (bool, string, error) {
	sw, err := k.Store.GCReclaimSwitch(ctx)
	if err != nil {
		return false, "", err
	}
	by := ""
	if sw.ChangedBy != nil {
		by = *sw.ChangedBy
	}
	return sw.Enabled, by, nil
}

// killSwitchTimeout bounds one read of the switch: a source that does not
// answer quickly is unreadable, and unreadable means stopped.
const killSwitchTimeout = time.Second

// Reasons reclamation is stopped (label of the reclaim_stopped metric).
const (
	StopOperator   = "operator"    // the kill switch is off
	StopFailClosed = "fail_closed" // the kill switch could not be read
	StopPhase      = "phase"       // the rollout phase deletes nothing
)

type reclaimStatus struct {
	enabled bool
	reason  string // one of Stop*, "" when enabled
	detail  string // who turned it off, or the read error
}

// reclaimStatus evaluates the phase and the kill switch now.
func (g *GC) reclaimStatus(ctx context.Context) reclaimStatus {
	if g.cfg.Phase < PhaseDelete {
		return reclaimStatus{reason: StopPhase, detail: "phase " + g.cfg.Phase.String()}
	}
	kctx, cancel := context.WithTimeout(ctx, killSwitchTimeout)
	defer cancel()
	enabled, by, err := g.cfg.KillSwitch.ReclaimEnabled(kctx)
	var st reclaimStatus
	switch {
	case err != nil:
		st = reclaimStatus{reason: StopFailClosed, detail: err.Error()}
	case !enabled:
		st = reclaimStatus{reason: StopOperator, detail: by}
	default:
		st = reclaimStatus{enabled: true}
	}
	g.metrics.setReclaimStatus(st)
	return st
}

// errReclaimStopped wraps the reason a delete was refused.
var errReclaimStopped = errors.New("gc: reclamation stopped")

// mayDelete is the MayDelete of every cleanup: the kill switch, evaluated
// before each delete (not once per batch), fail-closed.
func (g *GC) mayDelete(ctx context.Context) error {
	st := g.reclaimStatus(ctx)
	if st.enabled {
		return nil
	}
	return fmt.Errorf("%w (%s): %s", errReclaimStopped, st.reason, st.detail)
}

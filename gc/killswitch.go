package gc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
)

// KillSwitch is the source of the operator kill switch
// (docs/garbage-collection.md "Operational controls"): it
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
	return switchState(k.Store.GCReclaimSwitch(ctx))
}

// reclaimEnabledTx reads the switch on the cleanup transaction's
// connection.
func (k StoreKillSwitch) reclaimEnabledTx(ctx context.Context, tx pgx.Tx) (bool, string, error) {
	return switchState(k.Store.GCReclaimSwitchTx(ctx, tx))
}

// txKillSwitch is a KillSwitch that can be read inside the cleanup
// transaction.
type txKillSwitch interface {
	reclaimEnabledTx(ctx context.Context, tx pgx.Tx) (bool, string, error)
}

func switchState(sw *store.GCReclaimSwitch, err error) (bool, string, error) {
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

// reclaimStatus evaluates the phase and the kill switch now (on tx's
// connection when tx is not nil and the source supports it).
func (g *GC) reclaimStatus(ctx context.Context) reclaimStatus { return g.reclaimStatusTx(ctx, nil) }

func (g *GC) reclaimStatusTx(ctx context.Context, tx pgx.Tx) reclaimStatus {
	if g.cfg.Phase < PhaseDelete {
		return reclaimStatus{reason: StopPhase, detail: "phase " + g.cfg.Phase.String()}
	}
	kctx, cancel := context.WithTimeout(ctx, killSwitchTimeout)
	defer cancel()
	var (
		enabled bool
		by      string
		err     error
	)
	if ks, ok := g.cfg.KillSwitch.(txKillSwitch); ok && tx != nil {
		enabled, by, err = ks.reclaimEnabledTx(kctx, tx)
	} else {
		enabled, by, err = g.cfg.KillSwitch.ReclaimEnabled(kctx)
	}
	var st reclaimStatus
	switch {
	case err != nil:
		st = reclaimStatus{reason: StopFailClosed, detail: err.Error()}
	case !enabled:
		st = reclaimStatus{reason: StopOperator, detail: by}
	default:
		st = reclaimStatus{enabled: true}
	}
	return st
}

// errReclaimStopped wraps the reason a delete was refused.
var errReclaimStopped = errors.New("gc: reclamation stopped")

// mayDelete is the MayDelete of every cleanup: the kill switch, evaluated
// before each delete (not once per batch), fail-closed.
func (g *GC) mayDelete(ctx context.Context, tx pgx.Tx) error {
	st := g.reclaimStatusTx(ctx, tx)
	if st.enabled {
		return nil
	}
	return fmt.Errorf("%w (%s): %s", errReclaimStopped, st.reason, st.detail)
}

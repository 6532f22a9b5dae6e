package plan

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/strata-ledger/strata/fsm"
)

// decisionID derives an event id from a step's name and its identifying
// parts.
func decisionID(step string, parts ...string) fsm.EventID {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, p := range append([]string{"strata/reconcile/v1", step}, parts...) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		h.Write([]byte(p))
	}
	var id fsm.EventID
	copy(id[:], h.Sum(nil))
	return id
}

// planned is an event a planner decided on; the loop stamps its origin
// (region, node) and HLC before proposing it.
func planned(id fsm.EventID, t fsm.EventType, s *fsm.JobState, fence uint64, body fsm.Body) fsm.Event {
	return fsm.Event{ID: id, Type: t, JobID: s.JobID, Tenant: s.Tenant, Fence: fence, Body: body}
}

// Forwarded reports whether a regional ledger event is one the forwarder
// carries to the global ledger: the region's acceptance, progress,
// cancellation acks and failure (DESIGN §4) — the job events this region
// decided, not those the gates delivered to it. The forwarder and the
// simulation of the planners share this one rule.
func Forwarded(e *fsm.Event, region string) bool {
	switch b := e.Body.(type) {
	case *fsm.JobAccepted:
		return b.Region == region
	case *fsm.JobProgressReported:
		return b.Region == region
	case *fsm.JobCancellationAcked:
		return b.Region == region
	case *fsm.JobFailed:
		return b.FailedRegion == region && e.Region == region
	}
	return false
}

// Delivery is what a region needs of job s: its JobCreated and, when
// stop, the decision in force: what the gates deliver to a region (the
// global reconciler, and anti-entropy for a job a region lacks).
func Delivery(tx fsm.ReadTx, s *fsm.JobState, stop bool) ([]fsm.Event, error) {
	ids := []fsm.EventID{s.Created.ID}
	if stop {
		ids = append(ids, s.Decision.EventID)
	}
	var out []fsm.Event
	for _, id := range ids {
		se, err := tx.Event(s.Tenant, id) // a job's events are of its tenant
		if err != nil {
			return nil, err
		}
		if se != nil {
			out = append(out, se.Event)
		}
	}
	return out, nil
}

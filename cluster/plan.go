package cluster

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/strata-ledger/strata/fsm"
)

// Reconcilers (DESIGN §4) are split into pure planners — plan_global.go,
// plan_region.go: replicated state in, events out — and the loops that run
// them on group leaders (reconcile*.go). A planned event has a
// deterministic id derived from what it decides, so two leaders, a retry
// or a replay that plan the same step produce the same id, and the
// ledger's idempotent apply keeps exactly one of them: "a leader change,
// a crash or a duplicated message changes nothing but timing".

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

package cluster

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/api"
)

// Idempotency keys (DESIGN §9): a submit with a key creates the job with
// an event id derived from (tenant, key), so the replicated ledger itself
// refuses a second job for the key on every gate (the id is stored once;
// a second JobCreated with that id conflicts). A repeat finds the stored
// JobCreated by id: same spec → 200 with the same job, other spec → 409.
// Submits still in flight (acknowledged below the tier, not yet applied)
// are remembered in a small per-gate cache so a quick retry to the same
// gate gets the same answer before the ledger has it.

// idempotencyCacheEntries bounds the in-flight keys a gate remembers.
const idempotencyCacheEntries = 65_536

// idempotentEventID is the JobCreated event id of (tenant, key).
func idempotentEventID(tenant, key string) fsm.EventID {
	h := sha256.New()
	fmt.Fprintf(h, "strata idempotency v1\x00%s\x00%s", tenant, key)
	var id fsm.EventID
	copy(id[:], h.Sum(nil))
	return id
}

type idemEntry struct {
	jobID string
	spec  *fsm.JobSpec
	hlc   hlc.Timestamp
}

// idempotencyCache maps event ids to the job they created, FIFO-bounded.
type idempotencyCache struct {
	mu    sync.Mutex
	max   int
	byID  map[fsm.EventID]idemEntry
	order []fsm.EventID
}

func newIdempotencyCache(max int) *idempotencyCache {
	return &idempotencyCache{max: max, byID: map[fsm.EventID]idemEntry{}}
}

// claim records id → e unless id is known; it returns the known entry
// and false then.
func (c *idempotencyCache) claim(id fsm.EventID, e idemEntry) (idemEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[id]; ok {
		return e, false
	}
	if len(c.order) >= c.max {
		delete(c.byID, c.order[0])
		c.order = c.order[1:]
	}
	c.byID[id] = e
	c.order = append(c.order, id)
	return idemEntry{}, true
}

// replayIdempotent answers a submit whose key already created a job in
// the ledger; done is false when the ledger does not have it yet.
func (n *Node) replayIdempotent(w http.ResponseWriter, id fsm.EventID, spec *fsm.JobSpec) (done bool, err error) {
	se, err := n.ledger.Event(id)
	if errors.Is(err, fsm.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	created, ok := se.Body.(*fsm.JobCreated)
	if !ok {
		return false, &APIError{Status: http.StatusConflict, Code: CodeConflict, Message: "idempotency key collides with another event"}
	}
	n.answerReplay(w, idemEntry{jobID: se.JobID, spec: &created.Spec, hlc: se.HLC}, spec)
	return true, nil
}

// answerReplay writes 200 with the job of a repeated key, or 409 when the
// repeat's body differs.
func (n *Node) answerReplay(w http.ResponseWriter, prev idemEntry, got *fsm.JobSpec) {
	jobID := prev.jobID
	if !reflect.DeepEqual(normalSpec(prev.spec), normalSpec(got)) {
		writeError(w, &APIError{Status: http.StatusConflict, Code: CodeConflict,
			Message: fmt.Sprintf("idempotency key %q was used for job %s with a different body", got.IdempotencyKey, jobID),
			Details: map[string]any{"job_id": jobID}})
		return
	}
	w.Header().Set("Location", "/v1/jobs/"+jobID)
	writeJSON(w, http.StatusOK, api.SubmitJobResponse{JobID: jobID, Existing: true,
		WriteResponse: api.WriteResponse{Durability: n.tier.String(), HLC: prev.hlc}})
}

// normalSpec makes nil and empty slices compare equal.
func normalSpec(s *fsm.JobSpec) fsm.JobSpec {
	c := *s
	if len(c.Regions) == 0 {
		c.Regions = nil
	}
	if len(c.Workflows) == 0 {
		c.Workflows = nil
	}
	return c
}

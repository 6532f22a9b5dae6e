package chaos

import (
	"fmt"
	"sync"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

// OpKind is a kind of workload operation.
type OpKind string

// Operation kinds.
const (
	OpSubmit OpKind = "submit" // POST /v1/jobs?durability=GLOBAL with an idempotency key
	OpCancel OpKind = "cancel" // POST /v1/jobs/{id}/cancel (GLOBAL)
	OpRead   OpKind = "read"   // GET /v1/jobs/{id}?consistency=strong
)

// Outcome is what became of an operation.
type Outcome string

// Outcomes.
const (
	// OK: acknowledged (a read: answered, found or not).
	OK Outcome = "ok"
	// Failed: refused by the cluster with an answer that says it changed
	// nothing (a 4xx); or a read that got no answer. Not in the model.
	Failed Outcome = "failed"
	// Unknown: a write without an answer (timeout, lost connection, 5xx):
	// it may or may not have taken effect.
	Unknown Outcome = "unknown"
)

// MaxOps bounds a history; Record drops operations past it and counts
// them, so a long run's memory is bounded.
const MaxOps = 1_000_000

// Op is one operation of the history.
type Op struct {
	Client  int           `json:"client"`
	Kind    OpKind        `json:"kind"`
	Key     string        `json:"key"`              // the job's idempotency key (the model's partition)
	JobID   string        `json:"job_id,omitempty"` // known once a submit was acknowledged
	Call    time.Duration `json:"call"`             // since the run's start
	Return  time.Duration `json:"return"`
	Outcome Outcome       `json:"outcome"`
	// Found and Status: a read's answer (404: not found).
	Found  bool          `json:"found,omitempty"`
	Status fsm.JobStatus `json:"status,omitempty"`
	// Cancel is a cancel's ledger outcome: applied, duplicate, absorbed.
	Cancel string `json:"cancel,omitempty"`
	// Existing: a submit answered with the job of an earlier submit of
	// its key.
	Existing bool `json:"existing,omitempty"`
	// Durability is the level a 2xx write answer names; the workload asks
	// for GLOBAL, so anything less is not an acknowledgement.
	Durability string `json:"durability,omitempty"`
	Final      bool   `json:"final,omitempty"` // a read of the end check
	Err        string `json:"err,omitempty"`
}

func (o Op) String() string {
	s := fmt.Sprintf("[%v..%v] c%d %s %s", o.Call.Round(time.Millisecond), o.Return.Round(time.Millisecond), o.Client, o.Kind, o.Key)
	if o.JobID != "" {
		s += " " + o.JobID
	}
	s += " -> " + string(o.Outcome)
	switch {
	case o.Kind == OpRead && o.Outcome == OK && o.Found:
		s += " " + o.Status.String()
	case o.Kind == OpRead && o.Outcome == OK:
		s += " not found"
	case o.Kind == OpCancel && o.Cancel == CancelRefused:
		s += " " + o.Cancel + " " + o.Status.String()
	case o.Kind == OpCancel && o.Cancel != "":
		s += " " + o.Cancel
	}
	if o.Err != "" {
		s += " (" + o.Err + ")"
	}
	return s
}

// History records operations from many goroutines.
type History struct {
	start   time.Time
	mu      sync.Mutex
	ops     []Op
	dropped int
}

// NewHistory starts a history at start: operation times are measured
// from it, on the monotonic clock.
func NewHistory(start time.Time) *History { return &History{start: start} }

// Since is now as an operation time.
func (h *History) Since() time.Duration { return time.Since(h.start) }

// Record appends op.
func (h *History) Record(op Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ops) >= MaxOps {
		h.dropped++
		return
	}
	h.ops = append(h.ops, op)
}

// Ops returns a copy of the operations and how many were dropped.
func (h *History) Ops() ([]Op, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Op(nil), h.ops...), h.dropped
}

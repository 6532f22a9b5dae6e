package chaos

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/strata-ledger/strata/fsm"
)

// jobModel is the sequential specification of one job as the workload
// sees it (see the package doc). It is the state of one porcupine
// partition: a value, so Step never mutates what it was given.
type jobModel struct {
	created   bool
	cancelled bool          // an applied (or maybe-applied) cancel
	status    fsm.JobStatus // the furthest status a read saw; 0: none
	// anyTerminal: a cancel answered absorbed, so the job was terminal
	// then, its status unseen.
	anyTerminal bool
}

// Op.Cancel of a cancel the gate refused after reading the job
// linearizably (DESIGN §8: a cancel confirms leadership first): the
// refusal is an observation of the job, like a STRONG read's.
const (
	// CancelNotFound: answered 404, no such job.
	CancelNotFound = "not-found"
	// CancelRefused: answered 409, the job is terminal; Op.Status is the
	// status the answer named.
	CancelRefused = "refused-terminal"
)

// rank orders statuses the way a job moves: PENDING < RUNNING <
// CANCELLING < every terminal status.
func rank(s fsm.JobStatus) int {
	switch {
	case s.Terminal():
		return 3
	case s == fsm.JobStatusCancelling:
		return 2
	case s == fsm.JobStatusRunning:
		return 1
	}
	return 0
}

// terminal reports whether the model knows the job ended.
func (m jobModel) terminal() bool { return m.anyTerminal || m.status.Terminal() }

// step applies op to m and says whether the job could have answered so.
func (m jobModel) step(op Op) (bool, jobModel) {
	switch op.Kind {
	case OpSubmit: // acknowledged or pending: the job exists from here on
		m.created = true
		return true, m
	case OpCancel:
		if op.Cancel == CancelNotFound { // answered 404: as a read that misses the job
			return !m.created, m
		}
		if op.Cancel == CancelRefused { // answered 409 after a linearizable read: as a read of a terminal job
			return m.read(true, op.Status)
		}
		if op.Outcome == Unknown || op.Cancel == "applied" || op.Cancel == "duplicate" {
			if op.Outcome == OK && op.Cancel == "applied" && m.terminal() {
				return false, m // a terminal job absorbs a cancel
			}
			if !m.terminal() {
				m.cancelled = true
			}
			return true, m
		}
		if op.Cancel == "absorbed" && !m.terminal() {
			m.anyTerminal = true
		}
		return true, m
	}
	return m.read(op.Found, op.Status) // OpRead
}

// read says whether a STRONG read could answer found/status in m.
func (m jobModel) read(found bool, status fsm.JobStatus) (bool, jobModel) {
	if !found {
		return !m.created, m
	}
	switch {
	case !m.created:
		return false, m // a job no submit of which was invoked
	case rank(status) < rank(m.status):
		return false, m // the status went back
	case m.status.Terminal() && status != m.status:
		return false, m // a terminal status changed
	case m.anyTerminal && !status.Terminal():
		return false, m
	case m.cancelled && rank(status) < rank(fsm.JobStatusCancelling):
		return false, m // an acknowledged cancel is not seen
	}
	m.status = status
	return true, m
}

// porcupineModel wraps jobModel for porcupine. Inputs are Ops; outputs are
// unused (an Op carries its own answer).
var porcupineModel = porcupine.Model{
	Init: func() any { return jobModel{} },
	Step: func(state, input, _ any) (bool, any) {
		return state.(jobModel).step(input.(Op))
	},
	DescribeOperation: func(input, _ any) string { return input.(Op).String() },
}

// pendingReturn is the return time of an operation whose outcome is
// unknown: after everything, so porcupine may place it anywhere after
// its call, or nowhere that matters.
const pendingReturn = math.MaxInt64

// toPorcupine turns one job's operations into porcupine's history: failed
// operations changed nothing and are left out.
func toPorcupine(ops []Op) []porcupine.Operation {
	out := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		if op.Outcome == Failed {
			continue
		}
		ret := int64(op.Return)
		if op.Outcome == Unknown {
			ret = pendingReturn
		}
		out = append(out, porcupine.Operation{ClientId: op.Client, Input: op, Call: int64(op.Call), Return: ret})
	}
	return out
}

// Linearizability is the verdict of the linearizability check.
type Linearizability struct {
	Jobs    int      `json:"jobs"`    // partitions checked
	Illegal []string `json:"illegal"` // keys whose history is not linearizable
	// Unknown: keys whose check ran out of time (not counted as anomalies).
	Unknown []string `json:"unknown,omitempty"`
}

// checkLinearizable checks each key's operations on its own, each within
// perKey, all within total (keys left when total runs out are Unknown).
func checkLinearizable(byKey map[string][]Op, perKey, total time.Duration) Linearizability {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range byKey {
			if !yield(k) {
				return
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), total)
	defer cancel()
	var v Linearizability
	for _, k := range keys {
		v.Jobs++
		if ctx.Err() != nil {
			v.Unknown = append(v.Unknown, k)
			continue
		}
		switch porcupine.CheckOperationsTimeout(porcupineModel, toPorcupine(byKey[k]), perKey) {
		case porcupine.Illegal:
			v.Illegal = append(v.Illegal, k)
		case porcupine.Unknown:
			v.Unknown = append(v.Unknown, k)
		}
	}
	return v
}

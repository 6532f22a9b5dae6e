package worker

import (
	"time"

	"github.com/strata-ledger/strata/transport/api"
)

// A frame gets no answer, so a worker cannot see a UDP path that drops
// everything (a firewall, a middlebox): sends succeed and nothing
// arrives. The heartbeat's recorded counters are the only echo. The
// stallJudge watches them: when the ledger stays behind what the worker
// had sent before its previous heartbeat, and none of its counters
// moves, for a whole window, the path is taken as blocked and the
// session moves from UDP to TCP (and from TCP to HTTP).

// defaultStallWindow is how long the data plane may deliver nothing
// before the worker moves to the next transport: well above the normal
// delay from a frame to the ledger (a 500 ms flush, a commit) and an
// election's pause, so a healthy path is never abandoned.
const defaultStallWindow = 10 * time.Second

// stallJudge is pure: observe takes the clock's reading.
type stallJudge struct {
	window time.Duration
	since  time.Time         // behind and unmoving since; zero: not
	seen   map[string]uint64 // the last recorded total per workflow
}

// observe takes one heartbeat answer: sent is the totals (completed +
// failed) the worker had flushed before its previous heartbeat, recorded
// the ledger's counters, judging false when backpressure (not NONE) may
// hold the ledger back on purpose. It reports true when the data plane
// has delivered nothing for the window; the judge then starts afresh.
func (j *stallJudge) observe(now time.Time, sent map[string]uint64, recorded []api.RecordedProgress, judging bool) bool {
	behind, moved := false, false
	seen := make(map[string]uint64, len(recorded))
	for _, r := range recorded {
		total := r.Completed + r.Failed
		seen[r.Workflow] = total
		if prev, ok := j.seen[r.Workflow]; ok && total > prev {
			moved = true
		}
		if s, ok := sent[r.Workflow]; ok && total < s {
			behind = true
		}
	}
	j.seen = seen
	switch {
	case !judging || !behind || moved:
		j.since = time.Time{}
		return false
	case j.since.IsZero():
		j.since = now
		return false
	case now.Sub(j.since) >= j.window:
		j.since = time.Time{}
		return true
	}
	return false
}

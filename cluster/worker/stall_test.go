package worker

import (
	"testing"
	"time"

	"github.com/strata-ledger/strata/transport/api"
)

func rec(wf string, completed, failed uint64) api.RecordedProgress {
	return api.RecordedProgress{Workflow: wf, LeaseFence: 1, Completed: completed, Failed: failed}
}

// step is one heartbeat answer the judge observes.
type step struct {
	at       time.Duration
	recorded []api.RecordedProgress
	judging  bool
	want     bool
}

func TestStallJudge(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	sent := map[string]uint64{"a": 100, "b": 50}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"behind and still for the window: stalled", []step{
			{0, []api.RecordedProgress{rec("a", 0, 0), rec("b", 50, 0)}, true, false},
			{5 * time.Second, []api.RecordedProgress{rec("a", 0, 0), rec("b", 50, 0)}, true, false},
			{10 * time.Second, []api.RecordedProgress{rec("a", 0, 0), rec("b", 50, 0)}, true, true},
			// the judge starts afresh after a verdict
			{11 * time.Second, []api.RecordedProgress{rec("a", 0, 0), rec("b", 50, 0)}, true, false},
		}},
		{"a counter that moves is a live path", []step{
			{0, []api.RecordedProgress{rec("a", 10, 0)}, true, false},
			{9 * time.Second, []api.RecordedProgress{rec("a", 10, 1)}, true, false},
			{15 * time.Second, []api.RecordedProgress{rec("a", 10, 1)}, true, false},
			{24 * time.Second, []api.RecordedProgress{rec("a", 10, 1)}, true, false},
			{25 * time.Second, []api.RecordedProgress{rec("a", 10, 1)}, true, true},
		}},
		{"caught up: never stalled", []step{
			{0, []api.RecordedProgress{rec("a", 90, 10)}, true, false},
			{time.Hour, []api.RecordedProgress{rec("a", 90, 10)}, true, false},
		}},
		{"backpressure suspends the judgement", []step{
			{0, []api.RecordedProgress{rec("a", 0, 0)}, true, false},
			{10 * time.Second, []api.RecordedProgress{rec("a", 0, 0)}, false, false},
			{15 * time.Second, []api.RecordedProgress{rec("a", 0, 0)}, true, false},
			{24 * time.Second, []api.RecordedProgress{rec("a", 0, 0)}, true, false},
			{25 * time.Second, []api.RecordedProgress{rec("a", 0, 0)}, true, true},
		}},
		{"a workflow the worker sent nothing for is not behind", []step{
			{0, []api.RecordedProgress{rec("c", 0, 0)}, true, false},
			{time.Hour, []api.RecordedProgress{rec("c", 0, 0)}, true, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := stallJudge{window: 10 * time.Second}
			for i, s := range tc.steps {
				if got := j.observe(at(s.at), sent, s.recorded, s.judging); got != s.want {
					t.Fatalf("step %d (%s): stalled %v, want %v", i, s.at, got, s.want)
				}
			}
		})
	}
}

package httpapi

import (
	"errors"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/peer"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

func TestWorkerBackpressureLevels(t *testing.T) {
	tests := []struct {
		fill float64
		want string
	}{
		{0, api.BackpressureNone}, {0.5, api.BackpressureNone}, {0.6999, api.BackpressureNone},
		{0.70, api.BackpressureThrottle}, {0.8499, api.BackpressureThrottle},
		{0.85, api.BackpressureBatch}, {0.9499, api.BackpressureBatch},
		{0.95, api.BackpressureReject}, {1, api.BackpressureReject}, {1.5, api.BackpressureReject},
	}
	for _, tt := range tests {
		if got := backpressureLevel(tt.fill); got != tt.want {
			t.Errorf("backpressureLevel(%v) = %s, want %s", tt.fill, got, tt.want)
		}
	}
	// The heartbeat returns the worse of the commit queue's and the
	// progress receive queue's levels.
	for _, fills := range [][]float64{{0.9, 0.1}, {0.1, 0.9}} {
		if got := backpressureLevel(fills...); got != api.BackpressureBatch {
			t.Errorf("backpressureLevel(%v) = %s, want the worse, BATCH", fills, got)
		}
	}
}

func TestWorkerStopList(t *testing.T) {
	leased := func(worker string, fence uint64) *fsm.WorkflowState {
		return &fsm.WorkflowState{Status: fsm.WorkflowStatusLeased, Worker: worker, LeaseFence: fence}
	}
	wfs := map[string]*fsm.WorkflowState{
		"mine":        leased("w1", 3),
		"other":       leased("w2", 3),
		"cancelled":   {Status: fsm.WorkflowStatusCancelled, LeaseFence: 3},
		"rescheduled": {Status: fsm.WorkflowStatusDispatched, LeaseFence: 3},
		"completed":   {Status: fsm.WorkflowStatusCompleted, LeaseFence: 3},
	}
	run := func(ids ...string) []api.RunningWorkflow {
		var out []api.RunningWorkflow
		for _, id := range ids {
			out = append(out, api.RunningWorkflow{Workflow: id, LeaseFence: 3})
		}
		return out
	}
	tests := []struct {
		name    string
		running []api.RunningWorkflow
		want    []string
	}{
		{"nothing running", nil, []string{}},
		{"own lease kept", run("mine"), []string{}},
		{"stale fence", []api.RunningWorkflow{{Workflow: "mine", LeaseFence: 2}}, []string{"mine"}},
		{"newer fence than the ledger", []api.RunningWorkflow{{Workflow: "mine", LeaseFence: 4}}, []string{"mine"}},
		{"another worker's lease", run("other"), []string{"other"}},
		{"not leased any more", run("cancelled", "rescheduled", "completed"), []string{"cancelled", "rescheduled", "completed"}},
		{"unknown, repeated once", run("ghost", "mine", "ghost"), []string{"ghost"}},
	}
	for _, tt := range tests {
		if got := stopList("w1", tt.running, wfs); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: stop = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestWorkerCheckReport(t *testing.T) {
	wf := func(st fsm.WorkflowStatus, worker string) *fsm.WorkflowState {
		return &fsm.WorkflowState{ID: "j/use1/a/0", Status: st, Worker: worker, LeaseFence: 2}
	}
	const (
		progress = fsm.TypeWorkflowProgress
		complete = fsm.TypeWorkflowCompleted
		fail     = fsm.TypeWorkflowFailed
	)
	tests := []struct {
		name  string
		wf    *fsm.WorkflowState
		fence uint64
		t     fsm.EventType
		dup   bool
		code  string // "" for none
	}{
		{"progress on own lease", wf(fsm.WorkflowStatusLeased, "w1"), 2, progress, false, ""},
		{"complete own lease", wf(fsm.WorkflowStatusLeased, "w1"), 2, complete, false, ""},
		{"unknown workflow", nil, 2, progress, false, "unknown_workflow"},
		{"stale fence", wf(fsm.WorkflowStatusLeased, "w1"), 1, progress, false, "stale_fence"},
		{"fence from the future", wf(fsm.WorkflowStatusLeased, "w1"), 3, complete, false, "stale_fence"},
		{"another worker's lease", wf(fsm.WorkflowStatusLeased, "w2"), 2, progress, false, "worker_mismatch"},
		{"rescheduled away", wf(fsm.WorkflowStatusDispatched, ""), 2, progress, false, "illegal_transition"},
		{"progress after the end", wf(fsm.WorkflowStatusCompleted, ""), 2, progress, false, "illegal_transition"},
		{"complete after a failure", wf(fsm.WorkflowStatusFailed, ""), 2, complete, false, "illegal_transition"},
		{"cancelled", wf(fsm.WorkflowStatusCancelled, ""), 2, fail, false, "illegal_transition"},
		{"retried complete", wf(fsm.WorkflowStatusCompleted, ""), 2, complete, true, ""},
		{"retried fail", wf(fsm.WorkflowStatusFailed, ""), 2, fail, true, ""},
		{"retried complete, stale fence", wf(fsm.WorkflowStatusCompleted, ""), 1, complete, false, "stale_fence"},
	}
	for _, tt := range tests {
		dup, err := checkReport(tt.wf, "j/use1/a/0", "w1", tt.fence, tt.t)
		code := ""
		if err != nil {
			code = peer.ResultCode(err)
		}
		if dup != tt.dup || code != tt.code {
			t.Errorf("%s: dup %v, code %q (%v); want dup %v, code %q", tt.name, dup, code, err, tt.dup, tt.code)
		}
	}
}

func TestWorkerCheckWorkerID(t *testing.T) {
	for _, id := range []string{"w1", "w-0123abcd", "Worker_7.eu-1", strings.Repeat("x", fsm.MaxNameBytes)} {
		if err := checkWorkerID(id); err != nil {
			t.Errorf("checkWorkerID(%q) = %v, want nil", id, err)
		}
	}
	for _, id := range []string{"", ".", "..", "a/b", "a b", "é", strings.Repeat("x", fsm.MaxNameBytes+1)} {
		err := checkWorkerID(id)
		ae, ok := err.(*httpx.APIError)
		if !ok || ae.Status != http.StatusBadRequest || ae.Details["field"] != "worker_id" {
			t.Errorf("checkWorkerID(%q) = %v, want a 400 naming worker_id", id, err)
		}
	}
	if id := newWorkerID(); !regexp.MustCompile(`^w-[0-9a-f]{8}$`).MatchString(id) || checkWorkerID(id) != nil {
		t.Errorf("newWorkerID() = %q", id)
	}
}

// A forwarded lease poll keeps the default wait: capLeaseWait only
// shortens explicit waits, so the default must fit the forward bound.
func TestLeaseWait_DefaultFitsAForward(t *testing.T) {
	if api.DefaultLeaseWait > MaxForwardedLeaseWait {
		t.Fatalf("api.DefaultLeaseWait %s exceeds MaxForwardedLeaseWait %s", api.DefaultLeaseWait, MaxForwardedLeaseWait)
	}
}

// Finding 10 of issue 17: a report's bodies are checked before the
// ledger is read, so a bad body is refused as such whatever the ledger
// holds (it was a 200 "rejected unknown_workflow" for an unknown
// workflow before).
func TestFinding10_ReportBodiesAreCheckedBeforeTheLedger(t *testing.T) {
	wf := fsm.WorkflowID("use1-1704931200000-g1-00001", "use1", "w", 0)
	status := func(err error) int {
		var ae *httpx.APIError
		if errors.As(err, &ae) {
			return ae.Status
		}
		return 0
	}
	_, err := endReport(fsm.TypeWorkflowFailed, &api.WorkflowEndRequest{Workflow: wf, LeaseFence: 1, Error: strings.Repeat("e", fsm.MaxTextBytes+1)})
	if got := status(err); got != http.StatusRequestEntityTooLarge {
		t.Errorf("an over-long error: %v (status %d)", err, got)
	}
	_, err = progressReports([]api.ProgressUpdate{{Workflow: wf, LeaseFence: 1, Completed: 1,
		Stats: fsm.Stats{{Name: "not a name!", Value: 1}}}})
	if got := status(err); got != http.StatusBadRequest {
		t.Errorf("a bad stat name: %v (status %d)", err, got)
	}
	if _, err := progressReports([]api.ProgressUpdate{{Workflow: wf, LeaseFence: 1, Completed: 1}}); err != nil {
		t.Errorf("a good update: %v", err)
	}
	if _, err := endReport(fsm.TypeWorkflowFailed, &api.WorkflowEndRequest{Workflow: wf, LeaseFence: 1, Error: "boom"}); err != nil {
		t.Errorf("a good failure: %v", err)
	}
}

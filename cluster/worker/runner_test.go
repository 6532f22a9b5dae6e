package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

const testWorkerID = "w-use1-1"

// harness runs a Runner against a fake manager with a fake clock.
type harness struct {
	f      *fakeManager
	clock  *fakeClock
	r      *Runner
	cancel context.CancelFunc
	done   chan error
}

// startRunner starts a worker (capacity 4, id w-use1-1, progress every
// 10 ms, clock frozen until the test advances it); mod adjusts its config.
func startRunner(t *testing.T, f *fakeManager, mod func(*Config)) *harness {
	t.Helper()
	clock := newFakeClock()
	cfg := Config{Client: f.client(), Region: "use1", Capacity: 4, WorkerID: testWorkerID, Now: clock.Now,
		ProgressInterval: 10 * time.Millisecond, LeaseWait: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if mod != nil {
		mod(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{f: f, clock: clock, r: r, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- r.Run(ctx) }()
	t.Cleanup(func() { h.stop(t) })
	return h
}

// stop cancels Run and returns what it returned.
func (h *harness) stop(t *testing.T) error {
	t.Helper()
	h.cancel()
	select {
	case err := <-h.done:
		h.done <- err // a later stop sees it too
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
		return nil
	}
}

func lease(wf string, fence uint64, s fsm.WorkflowSpec) api.Lease {
	return api.Lease{Workflow: wf, JobID: "use1-1700000000000-gate1-00001", Tenant: "acme", Region: "use1",
		Name: s.Name, Spec: s, LeaseFence: fence}
}

func running(refs ...api.RunningWorkflow) []api.RunningWorkflow { return refs }

func ref(wf string, fence uint64) api.RunningWorkflow {
	return api.RunningWorkflow{Workflow: wf, LeaseFence: fence}
}

// waitRunning waits for a heartbeat that reports exactly want.
func (f *fakeManager) waitRunning(want []api.RunningWorkflow) {
	f.t.Helper()
	f.waitFor("a heartbeat running "+describeRefs(want), func(f *fakeManager) bool {
		return len(f.beats) > 0 && slices.Equal(f.lastBeatLocked(), want)
	})
}

// settled waits until the worker has applied the current lease list and
// returns the heartbeats it sent afterwards (at least one): each took its
// running list after that list was applied.
func (f *fakeManager) settled() []api.HeartbeatRequest {
	f.t.Helper()
	f.mu.Lock()
	index := f.index
	f.mu.Unlock()
	// The worker polls with index i only once it has applied list i.
	f.waitFor("a lease poll past the current list", func(f *fakeManager) bool { return slices.Contains(f.polls, index) })
	f.mu.Lock()
	n := len(f.beats)
	f.mu.Unlock()
	// Heartbeats go one at a time: the second after this point was
	// composed after the first was answered, so after the poll.
	f.waitFor("two more heartbeats", func(f *fakeManager) bool { return len(f.beats) >= n+2 })
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.beats[n+1:])
}

func describeRefs(refs []api.RunningWorkflow) string {
	var s []string
	for _, r := range refs {
		s = append(s, fmt.Sprintf("%s@%d", r.Workflow, r.LeaseFence))
	}
	return "[" + strings.Join(s, " ") + "]"
}

func (f *fakeManager) progressOf(wf string) []api.ProgressUpdate {
	var out []api.ProgressUpdate
	for _, u := range f.progress {
		if u.Workflow == wf {
			out = append(out, u)
		}
	}
	return out
}

func hasProgress(wf string, completed, failed uint64) func(*fakeManager) bool {
	return func(f *fakeManager) bool {
		return slices.ContainsFunc(f.progressOf(wf), func(u api.ProgressUpdate) bool {
			return u.Completed == completed && u.Failed == failed
		})
	}
}

func TestRunner_CompletesWithFinalCounters(t *testing.T) {
	f := newFakeManager(t)
	h := startRunner(t, f, nil)
	s := spec(10*time.Second, 100, 0.25)
	f.setLeases(lease("wf-a", 1, s))
	f.waitFor("a first progress report", hasProgress("wf-a", 0, 0))

	h.clock.Advance(4 * time.Second)
	f.waitFor("progress at 4 s", hasProgress("wf-a", 300, 100))
	h.clock.Advance(7 * time.Second)
	f.waitFor("the end report", func(f *fakeManager) bool { return len(f.ends) > 0 })

	// The lease list still shows the workflow: it must not run again.
	f.setLeases(lease("wf-a", 1, s))
	for _, b := range f.settled() {
		if len(b.Running) != 0 {
			t.Fatalf("heartbeat after completion reports %v", b.Running)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	want := endCall{kind: "complete", req: api.WorkflowEndRequest{Workflow: "wf-a", LeaseFence: 1, Completed: 750, Failed: 250}}
	if len(f.ends) != 1 || f.ends[0].kind != want.kind || f.ends[0].req.Workflow != want.req.Workflow ||
		f.ends[0].req.LeaseFence != 1 || f.ends[0].req.Completed != 750 || f.ends[0].req.Failed != 250 || f.ends[0].req.Error != "" {
		t.Fatalf("ends = %+v, want one %+v", f.ends, want)
	}
	var prev api.ProgressUpdate
	for i, u := range f.progressOf("wf-a") {
		if u.Completed < prev.Completed || u.Failed < prev.Failed || u.Completed > 750 || u.Failed > 250 || u.LeaseFence != 1 {
			t.Fatalf("progress %d = %+v after %+v", i, u, prev)
		}
		prev = u
	}
	for _, q := range f.progQs {
		if q != api.DurabilityLocal {
			t.Fatalf("progress sent with durability %q, want %q", q, api.DurabilityLocal)
		}
	}
}

func TestRunner_ResumesFromTheLeaseCounters(t *testing.T) {
	f := newFakeManager(t)
	h := startRunner(t, f, nil)
	l := lease("wf-a", 3, spec(10*time.Second, 100, 0.25))
	l.Completed, l.Failed = 300, 100 // 4 s of the load, run elsewhere
	f.setLeases(l)
	f.waitFor("a first progress report", func(f *fakeManager) bool { return len(f.progress) > 0 })
	h.clock.Advance(6 * time.Second)
	f.waitFor("the end report", func(f *fakeManager) bool { return len(f.ends) > 0 })
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.ends[0]; e.kind != "complete" || e.req.Completed != 750 || e.req.Failed != 250 || e.req.LeaseFence != 3 {
		t.Fatalf("end = %+v, want complete 750/250 under fence 3", e)
	}
	for _, u := range f.progress {
		if u.Completed < 300 || u.Failed < 100 {
			t.Fatalf("progress %+v fell below the lease's counters", u)
		}
	}
}

func TestRunner_FailsWhenEveryRequestFails(t *testing.T) {
	f := newFakeManager(t)
	h := startRunner(t, f, nil)
	f.setLeases(lease("wf-a", 1, spec(time.Second, 10, 1)))
	f.waitFor("a first progress report", func(f *fakeManager) bool { return len(f.progress) > 0 })
	h.clock.Advance(time.Second)
	f.waitFor("the end report", func(f *fakeManager) bool { return len(f.ends) > 0 })
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.ends[0]; e.kind != "fail" || e.req.Error != "all 10 simulated requests failed" || e.req.Failed != 10 || e.req.Completed != 0 {
		t.Fatalf("end = %+v, want fail with all 10 requests failed", e)
	}
}

func TestRunner_ZeroDurationCompletesAtOnce(t *testing.T) {
	f := newFakeManager(t)
	startRunner(t, f, nil)
	f.setLeases(lease("wf-a", 1, spec(0, 100, 1)))
	f.waitFor("the end report", func(f *fakeManager) bool { return len(f.ends) > 0 })
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.ends[0]; e.kind != "complete" || e.req.Completed != 0 || e.req.Failed != 0 {
		t.Fatalf("end = %+v, want complete 0/0", e)
	}
}

func TestRunner_RetriesTheEndReport(t *testing.T) {
	f := newFakeManager(t)
	f.failEnds = 2
	startRunner(t, f, nil)
	f.setLeases(lease("wf-a", 1, spec(0, 1, 0)))
	f.waitFor("three end reports", func(f *fakeManager) bool { return len(f.ends) == 3 })
	f.waitRunning(running())
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failEnds != 0 {
		t.Fatalf("%d failures left", f.failEnds)
	}
}

func TestRunner_StopsPromptlyWhenTheManagerSaysStop(t *testing.T) {
	f := newFakeManager(t)
	f.hang["wf-a"] = true // its progress call never returns on its own
	startRunner(t, f, nil)
	f.setLeases(lease("wf-a", 1, spec(time.Hour, 100, 0)), lease("wf-b", 1, spec(time.Hour, 100, 0)))
	f.waitRunning(running(ref("wf-a", 1), ref("wf-b", 1)))
	f.waitFor("a hung progress call", func(f *fakeManager) bool { return len(f.progressOf("wf-a")) > 0 })

	f.set(func(f *fakeManager) { f.stop["wf-a"] = true })
	f.waitFor("the hung call to be abandoned", func(f *fakeManager) bool { return f.hungDone == 1 })
	f.waitRunning(running(ref("wf-b", 1)))
	// Still leased in a newer list: a stopped lease is not started again.
	f.setLeases(lease("wf-a", 1, spec(time.Hour, 100, 0)), lease("wf-b", 1, spec(time.Hour, 100, 0)))
	for _, b := range f.settled() {
		if !slices.Equal(b.Running, running(ref("wf-b", 1))) {
			t.Fatalf("heartbeat reports %v after wf-a was stopped", b.Running)
		}
	}
}

func TestRunner_SelfFencesWhenHeartbeatsFail(t *testing.T) {
	f := newFakeManager(t)
	f.ack = time.Second // the fence is due 800 ms after the last good send
	h := startRunner(t, f, nil)
	f.setLeases(lease("wf-a", 1, spec(time.Hour, 100, 0)))
	f.waitRunning(running(ref("wf-a", 1)))

	f.set(func(f *fakeManager) { f.dropBeats = true })
	// Once a dropped heartbeat is recorded, no good one is in flight.
	f.mu.Lock()
	n := len(f.beats)
	f.mu.Unlock()
	f.waitFor("a dropped heartbeat", func(f *fakeManager) bool { return len(f.beats) > n })
	h.clock.Advance(799 * time.Millisecond)
	f.mu.Lock()
	n = len(f.beats)
	f.mu.Unlock()
	f.waitFor("three more heartbeats", func(f *fakeManager) bool { return len(f.beats) >= n+3 })
	f.mu.Lock()
	for _, b := range f.beatsAfter(n + 1) {
		if !slices.Equal(b.Running, running(ref("wf-a", 1))) {
			f.mu.Unlock()
			t.Fatalf("stopped before the fence was due: heartbeat reports %v", b.Running)
		}
	}
	f.mu.Unlock()

	h.clock.Advance(time.Millisecond)
	f.waitRunning(running())

	// Heartbeats are back and the manager still leases wf-a to the
	// worker under fence 1: it runs again.
	f.set(func(f *fakeManager) { f.dropBeats = false })
	f.waitRunning(running(ref("wf-a", 1)))
}

func TestRunner_RegistersAgainWhenTheRegionForgetsIt(t *testing.T) {
	f := newFakeManager(t)
	h := startRunner(t, f, func(c *Config) { c.WorkerID = "" })
	f.setLeases(lease("wf-a", 1, spec(time.Hour, 100, 0)))
	f.waitRunning(running(ref("wf-a", 1)))
	if id := h.r.WorkerID(); id != fakeGeneratedID {
		t.Fatalf("WorkerID = %q, want the manager's %q", id, fakeGeneratedID)
	}

	// The region dropped the worker and rescheduled its workflow; it
	// comes back to the same worker under a new fence.
	var beatsBefore int
	f.set(func(f *fakeManager) {
		f.unknown = true
		f.leases = []api.Lease{lease("wf-a", 2, spec(time.Hour, 100, 0))}
		f.index++
		beatsBefore = len(f.beats)
	})
	f.waitRunning(running(ref("wf-a", 2)))
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.regs) != 2 || f.regs[1].WorkerID != fakeGeneratedID {
		t.Fatalf("registrations %+v, want a second one as %s", f.regs, fakeGeneratedID)
	}
	sawEmpty := false
	for _, b := range f.beatsAfter(beatsBefore) {
		if slices.Contains(b.Running, ref("wf-a", 1)) && sawEmpty {
			t.Fatal("the old lease ran again after the worker re-registered")
		}
		sawEmpty = sawEmpty || len(b.Running) == 0
	}
}

func TestRunner_StaleFenceStopsTheWorkflow(t *testing.T) {
	for _, code := range movedOnCodes {
		t.Run(code, func(t *testing.T) {
			f := newFakeManager(t)
			f.reject["wf-a"] = code
			startRunner(t, f, nil)
			f.setLeases(lease("wf-a", 1, spec(time.Hour, 100, 0)), lease("wf-b", 1, spec(time.Hour, 100, 0)))
			f.waitFor("a rejected progress report", func(f *fakeManager) bool { return len(f.progressOf("wf-a")) > 0 })
			f.waitRunning(running(ref("wf-b", 1)))
			f.setLeases(lease("wf-a", 1, spec(time.Hour, 100, 0)), lease("wf-b", 1, spec(time.Hour, 100, 0)))
			for _, b := range f.settled() {
				if !slices.Equal(b.Running, running(ref("wf-b", 1))) {
					t.Fatalf("heartbeat reports %v after wf-a's lease moved on", b.Running)
				}
			}
		})
	}
}

func TestRunner_CapacityAndFreedSlots(t *testing.T) {
	f := newFakeManager(t)
	startRunner(t, f, func(c *Config) { c.Capacity = 2 })
	long := spec(time.Hour, 1, 0)
	f.setLeases(lease("wf-a", 1, long), lease("wf-b", 1, long), lease("wf-c", 1, long))
	f.waitRunning(running(ref("wf-a", 1), ref("wf-b", 1)))
	for _, b := range f.settled() {
		if len(b.Running) > 2 {
			t.Fatalf("runs %v beyond capacity 2", b.Running)
		}
	}
	f.set(func(f *fakeManager) { f.stop["wf-a"] = true })
	f.waitRunning(running(ref("wf-b", 1), ref("wf-c", 1)))
}

func TestRunner_NewerFenceSupersedesTheRunningLease(t *testing.T) {
	f := newFakeManager(t)
	startRunner(t, f, nil)
	long := spec(time.Hour, 1, 0)
	f.setLeases(lease("wf-a", 1, long))
	f.waitRunning(running(ref("wf-a", 1)))
	f.setLeases(lease("wf-a", 2, long))
	f.waitRunning(running(ref("wf-a", 2)))
}

func TestRunner_StopsAndDeregistersWhenCancelled(t *testing.T) {
	f := newFakeManager(t)
	h := startRunner(t, f, nil)
	f.setLeases(lease("wf-a", 1, spec(time.Hour, 1, 0)))
	f.waitRunning(running(ref("wf-a", 1)))
	if err := h.stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if got := h.r.Running(); len(got) != 0 {
		t.Fatalf("still running %v after Run returned", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Equal(f.deregs, []string{testWorkerID}) {
		t.Fatalf("deregistrations %v, want [%s]", f.deregs, testWorkerID)
	}
	if len(f.ends) != 0 {
		t.Fatalf("a cancelled worker reported ends %+v", f.ends)
	}
}

func TestRunner_RefusedRegistrationIsAnError(t *testing.T) {
	f := newFakeManager(t)
	f.registerStatus = 401
	h := startRunner(t, f, nil)
	select {
	case err := <-h.done:
		h.done <- err
		if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), testWorkerID) {
			t.Fatalf("Run = %v, want the 401 naming the worker", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run kept retrying a refused registration")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.deregs) != 0 {
		t.Fatalf("deregistered %v without being registered", f.deregs)
	}
}

func TestNew_RejectsBadConfig(t *testing.T) {
	c, err := api.New(api.ClientConfig{Addrs: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	good := Config{Client: c, Region: "use1", Capacity: 1}
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no client", func(c *Config) { c.Client = nil }, "client"},
		{"bad region", func(c *Config) { c.Region = "US-East" }, "region"},
		{"zero capacity", func(c *Config) { c.Capacity = 0 }, "capacity 0"},
		{"capacity over the limit", func(c *Config) { c.Capacity = MaxCapacity + 1 }, "capacity"},
		{"bad worker id", func(c *Config) { c.WorkerID = "w/1" }, "worker id"},
		{"dot worker id", func(c *Config) { c.WorkerID = ".." }, "worker id"},
		{"lease wait too long", func(c *Config) { c.LeaseWait = time.Hour }, "lease wait"},
		{"unknown progress transport", func(c *Config) { c.Progress = "pigeon" }, "progress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.mod(&cfg)
			if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error about %s", err, tt.want)
			}
		})
	}
	if _, err := New(good); err != nil {
		t.Fatalf("good config: %v", err)
	}
}

func TestTimings(t *testing.T) {
	tests := []struct {
		name          string
		ack, interval time.Duration
		wantAck       time.Duration
		wantInterval  time.Duration
	}{
		{"as given", 6 * time.Second, time.Second, 6 * time.Second, time.Second},
		{"no window", 0, 0, defaultAckWindow, defaultAckWindow / 3},
		{"interval too long for the fence", 3 * time.Second, 2 * time.Second, 3 * time.Second, time.Second},
		{"tiny interval", time.Second, time.Nanosecond, time.Second, minHeartbeatInterval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ack, interval := timings(&api.RegisterWorkerResponse{AckWindow: fsm.Duration(tt.ack), HeartbeatInterval: fsm.Duration(tt.interval)})
			if ack != tt.wantAck || interval != tt.wantInterval {
				t.Fatalf("timings = %v, %v; want %v, %v", ack, interval, tt.wantAck, tt.wantInterval)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	res := func(outcome, code string) *api.WorkerReportResponse {
		return &api.WorkerReportResponse{Results: []api.WorkerReportResult{
			{Workflow: "other", Outcome: "rejected", Code: "stale_fence"},
			{Workflow: "wf", Outcome: outcome, Code: code},
		}}
	}
	tests := []struct {
		name string
		res  *api.WorkerReportResponse
		err  error
		want verdict
	}{
		{"applied", res("applied", ""), nil, reportAccepted},
		{"duplicate", res("duplicate", ""), nil, reportAccepted},
		{"no result for the workflow (local ack)", &api.WorkerReportResponse{}, nil, reportAccepted},
		{"stale fence as a code", res("rejected", "stale_fence"), nil, reportMovedOn},
		{"stale fence as the outcome", res("stale_fence", ""), nil, reportMovedOn},
		{"absorbed yet stale", res("absorbed", "stale_fence"), nil, reportMovedOn},
		{"illegal transition", res("rejected", "illegal_transition"), nil, reportMovedOn},
		{"worker mismatch", res("rejected", "worker_mismatch"), nil, reportMovedOn},
		{"unknown workflow", res("rejected", "unknown_workflow"), nil, reportMovedOn},
		{"unknown worker result", res("rejected", api.CodeUnknownWorker), nil, reportLost},
		{"other rejection", res("rejected", "limit"), nil, reportRefused},
		{"unknown worker status", nil, &api.Error{Status: 404, Code: api.CodeUnknownWorker}, reportLost},
		{"no leader", nil, &api.Error{Status: 503, Code: api.CodeUnavailable}, reportRetry},
		{"overloaded", nil, &api.Error{Status: 429, Code: "overloaded"}, reportRetry},
		{"forbidden", nil, &api.Error{Status: 403, Code: api.CodeForbidden}, reportRefused},
		{"unreachable", nil, api.ErrUnreachable, reportRetry},
		{"cancelled", nil, context.Canceled, reportRetry},
		{"wrapped", nil, errors.Join(errors.New("x"), &api.Error{Status: 404, Code: api.CodeUnknownWorker}), reportLost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, why := judge(tt.res, tt.err, "wf"); got != tt.want {
				t.Fatalf("judge = %d (%s), want %d", got, why, tt.want)
			}
		})
	}
}

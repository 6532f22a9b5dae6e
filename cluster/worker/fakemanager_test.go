package worker

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// fakeManager speaks the worker control plane of transport/api/workers.go
// over a real loopback socket, with knobs for the faults a real manager
// cannot be made to show on demand: dropped heartbeats, a forgotten
// worker, stale fences, hung reports, failing end reports, a Stop list.
// Everything it receives is recorded; waitFor blocks until a condition on
// the records holds.
type fakeManager struct {
	t   *testing.T
	srv *httptest.Server
	ack time.Duration // the ack window it hands out
	hb  time.Duration // the heartbeat interval it hands out

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
	// knobs
	registerStatus int                  // non-zero: registration answers this
	dropBeats      bool                 // heartbeats answer 503
	unknown        bool                 // calls 404 unknown_worker until the worker registers again
	stop           map[string]bool      // heartbeats say stop to these workflows
	reject         map[string]string    // reports on these workflows are rejected with this code
	hang           map[string]bool      // progress on these workflows hangs until the call is cancelled
	failEnds       int                  // the next end reports answer 503
	dataPlane      *api.DataPlaneAccess // offered at registration
	pressure       string               // heartbeats' backpressure ("": NONE)
	// recorded, when set, gives the ledger's counters of a running
	// workflow for the heartbeat's recorded list.
	recorded func(workflow string, fence uint64) api.RecordedProgress
	leases   []api.Lease
	index    uint64
	// records
	regs     []api.RegisterWorkerRequest
	deregs   []string
	beats    []api.HeartbeatRequest
	progress []api.ProgressUpdate
	progQs   []string // durability query of each progress call
	ends     []endCall
	polls    []uint64 // index of each lease poll
	hungDone int      // hung progress calls whose request was cancelled
}

type endCall struct {
	kind string // complete or fail
	req  api.WorkflowEndRequest
}

func newFakeManager(t *testing.T) *fakeManager {
	t.Helper()
	// An ack window of an hour: tests advance the clock by seconds
	// without tripping the fence, unless they set a shorter one.
	f := &fakeManager{t: t, ack: time.Hour, hb: 20 * time.Millisecond, changed: make(chan struct{}),
		stop: map[string]bool{}, reject: map[string]string{}, hang: map[string]bool{}, index: 1}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/workers", f.register)
	mux.HandleFunc("DELETE /v1/workers/{id}", f.deregister)
	mux.HandleFunc("POST /v1/workers/{id}/heartbeat", f.heartbeat)
	mux.HandleFunc("GET /v1/workers/{id}/leases", f.pollLeases)
	mux.HandleFunc("POST /v1/workers/{id}/progress", f.report)
	mux.HandleFunc("POST /v1/workers/{id}/complete", f.report)
	mux.HandleFunc("POST /v1/workers/{id}/fail", f.report)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// client is an API client of the fake.
func (f *fakeManager) client() *api.Client {
	c, err := api.New(api.ClientConfig{Addrs: []string{f.srv.URL}, Token: "worker-token-0123456789"})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// set changes the fake's knobs under its lock and wakes waiters.
func (f *fakeManager) set(change func(f *fakeManager)) {
	f.mu.Lock()
	change(f)
	f.bumpLocked()
	f.mu.Unlock()
}

// setLeases publishes a new lease list.
func (f *fakeManager) setLeases(leases ...api.Lease) {
	f.set(func(f *fakeManager) {
		f.leases = slices.Clone(leases)
		f.index++
	})
}

func (f *fakeManager) bumpLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// waitFor waits until cond holds on the fake's records (read under its
// lock), failing the test after a generous bound.
func (f *fakeManager) waitFor(what string, cond func(f *fakeManager) bool) {
	f.t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		ok, ch := cond(f), f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			f.mu.Lock()
			defer f.mu.Unlock()
			f.t.Fatalf("timed out waiting for %s; regs %v, beats %d (last %v), progress %v, ends %v",
				what, f.regs, len(f.beats), f.lastBeatLocked(), f.progress, f.ends)
		}
	}
}

func (f *fakeManager) lastBeatLocked() []api.RunningWorkflow {
	if len(f.beats) == 0 {
		return nil
	}
	return f.beats[len(f.beats)-1].Running
}

// beatsAfter returns the heartbeats recorded after the first n.
func (f *fakeManager) beatsAfter(n int) []api.HeartbeatRequest {
	if n >= len(f.beats) {
		return nil
	}
	return f.beats[n:]
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, api.ErrorEnvelope{Error: &api.Error{Code: code, Message: msg}})
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		writeErr(w, http.StatusBadRequest, api.CodeBadRequest, err.Error())
		return false
	}
	return true
}

const fakeGeneratedID = "w-gen-1"

func (f *fakeManager) register(w http.ResponseWriter, r *http.Request) {
	var req api.RegisterWorkerRequest
	if !decode(w, r, &req) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.bumpLocked()
	f.regs = append(f.regs, req)
	if f.registerStatus != 0 {
		writeErr(w, f.registerStatus, api.CodeUnauthenticated, "no such token")
		return
	}
	f.unknown = false
	id := req.WorkerID
	if id == "" {
		id = fakeGeneratedID
	}
	writeJSON(w, http.StatusCreated, api.RegisterWorkerResponse{WorkerID: id, Region: req.Region, Capacity: req.Capacity,
		AckWindow: fsm.Duration(f.ack), HeartbeatInterval: fsm.Duration(f.hb), DataPlane: f.dataPlane,
		WriteResponse: api.WriteResponse{Durability: "REGIONAL"}})
}

func (f *fakeManager) deregister(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.bumpLocked()
	f.deregs = append(f.deregs, r.PathValue("id"))
	writeJSON(w, http.StatusOK, api.WriteResponse{Durability: "REGIONAL"})
}

func (f *fakeManager) heartbeat(w http.ResponseWriter, r *http.Request) {
	var req api.HeartbeatRequest
	if !decode(w, r, &req) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.bumpLocked()
	f.beats = append(f.beats, req)
	switch {
	case f.unknown:
		writeErr(w, http.StatusNotFound, api.CodeUnknownWorker, "worker is not registered: register again")
		return
	case f.dropBeats:
		writeErr(w, http.StatusServiceUnavailable, api.CodeUnavailable, "no leader")
		return
	}
	resp := api.HeartbeatResponse{Stop: []string{}, Backpressure: cmp.Or(f.pressure, api.BackpressureNone), AckWindow: fsm.Duration(f.ack)}
	for _, rw := range req.Running {
		if f.stop[rw.Workflow] && !slices.Contains(resp.Stop, rw.Workflow) {
			resp.Stop = append(resp.Stop, rw.Workflow)
		}
		if f.recorded != nil {
			resp.Recorded = append(resp.Recorded, f.recorded(rw.Workflow, rw.LeaseFence))
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

func (f *fakeManager) pollLeases(w http.ResponseWriter, r *http.Request) {
	index, err := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	if err != nil {
		writeErr(w, http.StatusBadRequest, api.CodeBadRequest, "index")
		return
	}
	wait, err := time.ParseDuration(r.URL.Query().Get("wait"))
	if err != nil {
		wait = api.DefaultLeaseWait
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	f.mu.Lock()
	f.polls = append(f.polls, index)
	f.bumpLocked()
	for timedOut := false; !f.unknown && f.index <= index && !timedOut; {
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			timedOut = true
		case <-r.Context().Done():
			return
		}
		f.mu.Lock()
	}
	if f.unknown {
		f.mu.Unlock()
		writeErr(w, http.StatusNotFound, api.CodeUnknownWorker, "worker is not registered: register again")
		return
	}
	list := api.LeaseList{Index: f.index, Leases: slices.Clone(f.leases)}
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, list)
}

// report serves progress, complete and fail.
func (f *fakeManager) report(w http.ResponseWriter, r *http.Request) {
	var workflows []string
	var end *endCall
	switch kind := r.URL.Path[len("/v1/workers/"+r.PathValue("id")+"/"):]; kind {
	case "progress":
		var req api.ProgressRequest
		if !decode(w, r, &req) {
			return
		}
		f.mu.Lock()
		for _, u := range req.Updates {
			workflows = append(workflows, u.Workflow)
			f.progress = append(f.progress, u)
			f.progQs = append(f.progQs, r.URL.Query().Get(api.ParamDurability))
		}
	default:
		var req api.WorkflowEndRequest
		if !decode(w, r, &req) {
			return
		}
		f.mu.Lock()
		end = &endCall{kind: kind, req: req}
		workflows = append(workflows, req.Workflow)
		f.ends = append(f.ends, *end)
	}
	f.bumpLocked()
	if f.unknown {
		f.mu.Unlock()
		writeErr(w, http.StatusNotFound, api.CodeUnknownWorker, "worker is not registered: register again")
		return
	}
	if end == nil && slices.ContainsFunc(workflows, func(wf string) bool { return f.hang[wf] }) {
		f.mu.Unlock()
		<-r.Context().Done()
		f.set(func(f *fakeManager) { f.hungDone++ })
		return
	}
	if end != nil && f.failEnds > 0 {
		f.failEnds--
		f.mu.Unlock()
		writeErr(w, http.StatusServiceUnavailable, api.CodeUnavailable, "no leader")
		return
	}
	resp := api.WorkerReportResponse{WriteResponse: api.WriteResponse{Durability: "REGIONAL"}}
	for _, wf := range workflows {
		res := api.WorkerReportResult{Workflow: wf, Outcome: "applied"}
		if code := f.reject[wf]; code != "" {
			res = api.WorkerReportResult{Workflow: wf, Outcome: "rejected", Code: code, Message: fmt.Sprintf("workflow %s: %s", wf, code)}
		}
		resp.Results = append(resp.Results, res)
	}
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, resp)
}

// fakeClock is a settable Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

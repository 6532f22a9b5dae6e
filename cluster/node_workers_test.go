package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/httpapi"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/cluster/lifecycle"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// The worker control plane against real nodes (one cluster, subnet 238,
// reconcilers off), and the pure rules behind it. Workflows are dispatched
// and leased by proposing their events through the regional leader's
// pipeline, as the reconciler would; the views lease long-polls answer
// from are published by hand.

// workerEnv is the shared cluster of the worker API test and what the
// subtests build in it.
type workerEnv struct {
	t     *testing.T
	c     *testCluster
	lead  string // the regional leader at the start: calls go to it (it forwards if it lost the lead)
	jobID string
}

// lastHeard is when the leader last heard from worker id (zero if never).
func (e *workerEnv) lastHeard(id string) time.Time {
	t, _ := e.leader().life.LastHeard(id)
	return t
}

// leader is the regional leader now (it may have moved since e.lead was
// read: a loaded test machine makes elections happen).
func (e *workerEnv) leader() *Node { return e.c.node(e.c.leader(RoleManager)) }

// call sends a request with the admin token (all tenants). A 503 (no
// leader known while an election runs) is retried, as a worker would.
func (e *workerEnv) call(node, method, path, body string) reply {
	e.t.Helper()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	deadline := time.Now().Add(nodeTestWait)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		r := e.c.call(node, method, path, testAdminToken, b)
		if r.status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return r
		}
		e.c.leader(RoleManager) // wait until there is one again
		<-tick.C
	}
}

// propose commits workflow events of e's job through the leader's
// pipeline, as the reconciler would, and requires each to be applied.
func (e *workerEnv) propose(t *testing.T, fence uint64, bodies ...fsm.Body) {
	t.Helper()
	n := e.leader()
	events := make([]fsm.Event, len(bodies))
	for i, b := range bodies {
		ts, err := n.clock.Now()
		if err != nil {
			t.Fatal(err)
		}
		events[i] = fsm.Event{ID: commit.NewEventID(), Type: b.EventType(), JobID: e.jobID, Tenant: "acme", Region: "use1",
			Node: n.cfg.NodeID, HLC: ts, Fence: fence, Body: b}
	}
	ctx, cancel := context.WithTimeout(context.Background(), nodeTestWait)
	defer cancel()
	res, err := n.pipe.Submit(ctx, events, commit.DurabilityRegional)
	if err != nil {
		t.Fatalf("propose: %v", err)
	}
	for i, r := range res.Results {
		if r.Outcome != fsm.OutcomeApplied {
			t.Fatalf("propose %s: %s %v", events[i].Type, r.Outcome, r.Err)
		}
	}
}

// dispatch creates workflow name/0 of e's job and leases it to worker
// under fence (no lease when worker is empty); it returns its id.
func (e *workerEnv) dispatch(t *testing.T, name, worker string, fence uint64) string {
	t.Helper()
	id := fsm.WorkflowID(e.jobID, "use1", name, 0)
	bodies := []fsm.Body{&fsm.WorkflowDispatched{Workflow: id, Name: name, Instance: 0,
		Spec: fsm.WorkflowSpec{Name: name, Count: 1, Duration: fsm.Duration(30 * time.Second), Rate: 10}}}
	if worker != "" {
		bodies = append(bodies, &fsm.WorkflowLeased{Workflow: id, Worker: worker,
			LeaseUntilMs: time.Now().Add(time.Minute).UnixMilli(), LeaseFence: fence})
	}
	e.propose(t, 0, bodies...)
	return id
}

// workflow reads a workflow from the leader's ledger.
func (e *workerEnv) workflow(t *testing.T, id string) *fsm.WorkflowState {
	t.Helper()
	var wf *fsm.WorkflowState
	err := e.leader().store.View(func(tx fsm.ReadTx) (err error) {
		wf, err = tx.Workflow(id)
		return err
	})
	if err != nil || wf == nil {
		t.Fatalf("workflow %s: %v (absent: %v)", id, err, wf == nil)
	}
	return wf
}

// worker reads a worker from the leader's ledger (nil if never seen).
func (e *workerEnv) worker(t *testing.T, id string) *fsm.WorkerState {
	t.Helper()
	var ws *fsm.WorkerState
	err := e.leader().store.View(func(tx fsm.ReadTx) (err error) {
		ws, err = tx.Worker(id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// state is everything a refused request must leave alone on the leader:
// the ledger digest, every worker and every workflow. (Not the NodeWAL's
// last LSN: the forwarder records its position on its own schedule.)
func (e *workerEnv) state(t *testing.T) string {
	t.Helper()
	n := e.leader()
	digest, _, err := n.ledger.Digest()
	if err != nil {
		t.Fatal(err)
	}
	workers, err := n.ledger.Workers()
	if err != nil {
		t.Fatal(err)
	}
	var wfs []*fsm.WorkflowState
	if err := n.store.View(func(tx fsm.ReadTx) error {
		return tx.Workflows("", func(w *fsm.WorkflowState) error { wfs = append(wfs, w); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"digest": digest, "workers": workers, "workflows": wfs})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// refused sends a request that must fail with status and code, and checks
// that it changed nothing.
func (e *workerEnv) refused(t *testing.T, node, method, path, body string, status int, code string) *api.Error {
	t.Helper()
	before := e.state(t)
	r := e.call(node, method, path, body)
	if r.status != status {
		t.Fatalf("%s %s %s: %d %s, want %d", method, path, body, r.status, r.body, status)
	}
	ae := r.apiError(t)
	if code != "" && ae.Code != code {
		t.Fatalf("%s %s: code %s, want %s (%s)", method, path, ae.Code, code, ae.Message)
	}
	if after := e.state(t); after != before {
		t.Fatalf("%s %s %s changed the leader's state:\nbefore %s\nafter  %s", method, path, body, before, after)
	}
	return ae
}

// register registers worker id with capacity and wants status.
func (e *workerEnv) register(t *testing.T, node, id string, capacity int, status int) api.RegisterWorkerResponse {
	t.Helper()
	r := e.call(node, "POST", "/v1/workers", fmt.Sprintf(`{"worker_id":%q,"region":"use1","capacity":%d}`, id, capacity))
	if r.status != status {
		t.Fatalf("register %s on %s: %d %s, want %d", id, node, r.status, r.body, status)
	}
	var out api.RegisterWorkerResponse
	r.decode(t, &out)
	return out
}

// report posts a progress, complete or fail body for worker and decodes
// the per-workflow results.
func (e *workerEnv) report(t *testing.T, worker, what, query, body string) []api.WorkerReportResult {
	t.Helper()
	r := e.call(e.lead, "POST", "/v1/workers/"+worker+"/"+what+query, body)
	if r.status != http.StatusOK {
		t.Fatalf("%s: %d %s", what, r.status, r.body)
	}
	var out api.WorkerReportResponse
	r.decode(t, &out)
	return out.Results
}

func wantResults(t *testing.T, got []api.WorkerReportResult, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("results %+v, want %q", got, want)
	}
	for i, r := range got {
		s := r.Outcome
		if r.Code != "" {
			s += ":" + r.Code
		}
		if s != want[i] {
			t.Fatalf("results[%d] = %+v, want %s", i, r, want[i])
		}
	}
}

func TestWorkerAPI(t *testing.T) {
	c := startTestCluster(t, 238)
	e := &workerEnv{t: t, c: c, lead: c.leader(RoleManager), jobID: "use1-1704931200000-gate1-00001"}
	followers := c.followers(RoleManager)

	t.Run("Register", func(t *testing.T) { testWorkerRegister(t, e, followers) })
	t.Run("Auth", func(t *testing.T) { testWorkerAuth(t, e) })
	t.Run("Heartbeat", func(t *testing.T) { testWorkerHeartbeat(t, e) })
	t.Run("Progress", func(t *testing.T) { testWorkerProgress(t, e) })
	t.Run("CompleteAndFail", func(t *testing.T) { testWorkerEnd(t, e) })
	t.Run("Deregister", func(t *testing.T) { testWorkerDeregister(t, e) })
	t.Run("Leases", func(t *testing.T) { testWorkerLeases(t, e, followers) })
	t.Run("GoClient", func(t *testing.T) { testWorkerGoClient(t, e) })
}

func testWorkerRegister(t *testing.T, e *workerEnv, followers []string) {
	r := e.call(e.lead, "POST", "/v1/workers", `{"worker_id":"w1","region":"use1","capacity":4}`)
	var reg api.RegisterWorkerResponse
	r.decode(t, &reg)
	if r.status != http.StatusCreated || reg.WorkerID != "w1" || reg.Region != "use1" || reg.Capacity != 4 ||
		reg.Durability != "REGIONAL" || !strings.HasPrefix(reg.Session, "use1:") || r.header.Get("Location") != "/v1/workers/w1" ||
		time.Duration(reg.AckWindow) != DefaultWorkerAckWindow || time.Duration(reg.HeartbeatInterval) != DefaultWorkerAckWindow/3 {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	if ws := e.worker(t, "w1"); ws == nil || !ws.Active || ws.Capacity != 4 || ws.Region != "use1" {
		t.Fatalf("ledger worker: %+v", ws)
	}
	if e.lastHeard("w1").IsZero() {
		t.Fatal("registration did not touch the worker's liveness")
	}

	// A repeat is the same worker, on any node; another capacity is 409.
	before := e.state(t)
	for _, node := range []string{e.lead, followers[0], "g2"} {
		again := e.register(t, node, "w1", 4, http.StatusOK)
		if again.WorkerID != "w1" || again.Capacity != 4 || again.Durability != "REGIONAL" {
			t.Fatalf("repeat on %s: %+v", node, again)
		}
	}
	if after := e.state(t); after != before {
		t.Fatalf("a repeated registration changed the ledger")
	}
	e.refused(t, e.lead, "POST", "/v1/workers", `{"worker_id":"w1","region":"use1","capacity":5}`, http.StatusConflict, httpx.CodeConflict)

	// Through a follower and through a gate: forwarded to the leader.
	e.register(t, followers[1], "w2", 2, http.StatusCreated)
	e.register(t, "g3", "w3", 1, http.StatusCreated)
	for _, id := range []string{"w2", "w3"} {
		if ws := e.worker(t, id); ws == nil || !ws.Active {
			t.Fatalf("%s not registered: %+v", id, ws)
		}
	}

	// No id: the manager picks one. durability=local is honoured.
	gen := e.call(e.lead, "POST", "/v1/workers?durability=local", `{"region":"use1","capacity":1}`)
	var g api.RegisterWorkerResponse
	gen.decode(t, &g)
	if gen.status != http.StatusCreated || !regexp.MustCompile(`^w-[0-9a-f]{8}$`).MatchString(g.WorkerID) || g.Durability != "LOCAL" {
		t.Fatalf("generated id: %d %s", gen.status, gen.body)
	}
	testkit.WaitUntil(t, "generated worker applied", func() bool { ws := e.worker(t, g.WorkerID); return ws != nil && ws.Active })

	// Bad input: 4xx, nothing written.
	for _, tt := range []struct {
		body, query string
		status      int
		field       string
	}{
		{`{"worker_id":"w9","region":"euw1","capacity":1}`, "", 400, "region"},
		{`{"worker_id":"w9","region":"","capacity":1}`, "", 400, "region"},
		{`{"worker_id":"w9","region":"use1","capacity":0}`, "", 400, "capacity"},
		{`{"worker_id":"w9","region":"use1","capacity":1001}`, "", 400, "capacity"},
		{`{"worker_id":"a/b","region":"use1","capacity":1}`, "", 400, "worker_id"},
		{`{"worker_id":"..","region":"use1","capacity":1}`, "", 400, "worker_id"},
		{`{"worker_id":"` + strings.Repeat("w", 65) + `","region":"use1","capacity":1}`, "", 400, "worker_id"},
		{`{"worker_id":"w9","region":"use1","capacity":-1}`, "", 400, ""},
		{`{"worker_id":"w9","region":"use1","capacity":1,"extra":1}`, "", 400, ""},
		{`{"worker_id":"w9","region":"use1","capacity":1} {}`, "", 400, ""},
		{``, "", 400, ""},
		{`{"worker_id":"w9","region":"use1","capacity":1}`, "?durability=global", 400, ""},
		{`{"worker_id":"w9","region":"use1","capacity":1}`, "?durability=soon", 400, ""},
		{`{"worker_id":"` + strings.Repeat("w", httpx.MaxRequestBytes) + `"}`, "", 413, ""},
	} {
		ae := e.refused(t, e.lead, "POST", "/v1/workers"+tt.query, tt.body, tt.status, "")
		if tt.field != "" && ae.Details["field"] != tt.field {
			t.Errorf("%.80s: details %v, want field %s", tt.body, ae.Details, tt.field)
		}
	}
	if e.worker(t, "w9") != nil {
		t.Fatal("a refused registration registered w9")
	}
}

func testWorkerAuth(t *testing.T, e *workerEnv) {
	calls := []struct{ method, path, body string }{
		{"POST", "/v1/workers", `{"worker_id":"w9","region":"use1","capacity":1}`},
		{"DELETE", "/v1/workers/w1", ""},
		{"POST", "/v1/workers/w1/heartbeat", `{"running":[]}`},
		{"GET", "/v1/workers/w1/leases?wait=0s", ""},
		{"POST", "/v1/workers/w1/progress", `{"updates":[{"workflow":"x","lease_fence":1}]}`},
		{"POST", "/v1/workers/w1/complete", `{"workflow":"x","lease_fence":1}`},
		{"POST", "/v1/workers/w1/fail", `{"workflow":"x","lease_fence":1,"error":"e"}`},
	}
	for _, node := range []string{e.lead, "g1"} {
		for _, cl := range calls {
			before := e.state(t)
			for _, tc := range []struct {
				token  string
				status int
			}{{testAcmeToken, http.StatusForbidden}, {testReaderToken, http.StatusForbidden}, {"", http.StatusUnauthorized}} {
				r := e.c.call(node, cl.method, cl.path, tc.token, []byte(cl.body))
				if r.status != tc.status {
					t.Fatalf("%s %s on %s with %q: %d %s, want %d", cl.method, cl.path, node, tc.token, r.status, r.body, tc.status)
				}
				r.apiError(t)
			}
			if e.state(t) != before {
				t.Fatalf("%s %s without the right token changed state", cl.method, cl.path)
			}
		}
	}
	r := e.c.call(e.lead, "PUT", "/v1/workers/w1/heartbeat", testAdminToken, nil)
	if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
		t.Fatalf("PUT heartbeat: %d %v", r.status, r.header)
	}
}

func testWorkerHeartbeat(t *testing.T, e *workerEnv) {
	mine := e.dispatch(t, "hb-mine", "w1", 1)
	restale := e.dispatch(t, "hb-stale", "w1", 1)
	other := e.dispatch(t, "hb-other", "w2", 1)
	cancelled := e.dispatch(t, "hb-cancelled", "w1", 1)
	e.propose(t, 0, &fsm.WorkflowCancelled{Workflow: cancelled})
	rescheduled := e.dispatch(t, "hb-rescheduled", "w1", 1)
	e.propose(t, 0, &fsm.WorkflowRescheduled{Workflow: rescheduled, FromWorker: "w1", Reason: "test"})
	ghost := e.jobID + "/use1/ghost/0"

	running := []api.RunningWorkflow{{Workflow: mine, LeaseFence: 1}, {Workflow: restale, LeaseFence: 7},
		{Workflow: other, LeaseFence: 1}, {Workflow: cancelled, LeaseFence: 1}, {Workflow: rescheduled, LeaseFence: 1},
		{Workflow: ghost, LeaseFence: 1}}
	body, _ := json.Marshal(api.HeartbeatRequest{Running: running})
	for _, node := range []string{e.lead, "g1"} {
		r := e.call(node, "POST", "/v1/workers/w1/heartbeat", string(body))
		var hb api.HeartbeatResponse
		r.decode(t, &hb)
		want := []string{restale, other, cancelled, rescheduled, ghost}
		if r.status != http.StatusOK || !reflect.DeepEqual(hb.Stop, want) || hb.Backpressure != api.BackpressureNone ||
			time.Duration(hb.AckWindow) != DefaultWorkerAckWindow {
			t.Fatalf("heartbeat via %s: %d %s\nwant stop %q", node, r.status, r.body, want)
		}
	}
	// A heartbeat renews liveness: only the heartbeat can have touched
	// w4 after sent.
	e.register(t, e.lead, "w4", 1, http.StatusCreated)
	sent := time.Now()
	if r := e.call(e.lead, "POST", "/v1/workers/w4/heartbeat", `{"running":[]}`); r.status != http.StatusOK {
		t.Fatalf("w4 heartbeat: %d %s", r.status, r.body)
	}
	if heard := e.lastHeard("w4"); heard.Before(sent) {
		t.Fatalf("heartbeat did not renew the worker's liveness: last heard %s, sent %s", heard, sent)
	}

	// Nothing running: an empty stop list (not null).
	r := e.call(e.lead, "POST", "/v1/workers/w2/heartbeat", `{"running":[]}`)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"stop":[]`) {
		t.Fatalf("empty heartbeat: %d %s", r.status, r.body)
	}

	e.refused(t, e.lead, "POST", "/v1/workers/nobody/heartbeat", `{"running":[]}`, http.StatusNotFound, api.CodeUnknownWorker)
	if !e.lastHeard("nobody").IsZero() {
		t.Fatal("a heartbeat of an unknown worker was remembered")
	}
	e.refused(t, e.lead, "POST", "/v1/workers/w1/heartbeat", `{"running":[{"workflow":"","lease_fence":1}]}`, 400, httpx.CodeBadRequest)
	e.refused(t, e.lead, "POST", "/v1/workers/w1/heartbeat", `{"running":[{"workflow":"x","lease_fence":0}]}`, 400, httpx.CodeBadRequest)
	e.refused(t, e.lead, "POST", "/v1/workers/w1/heartbeat", `{"running":[{"workflow":"x"}],"more":1}`, 400, httpx.CodeBadRequest)
	e.refused(t, e.lead, "POST", "/v1/workers/a%20b/heartbeat", `{"running":[]}`, 400, httpx.CodeBadRequest)
	many, _ := json.Marshal(api.HeartbeatRequest{Running: make([]api.RunningWorkflow, httpapi.MaxRunningPerHeartbeat+1)})
	e.refused(t, e.lead, "POST", "/v1/workers/w1/heartbeat", string(many), 413, httpx.CodeTooLarge)
}

func testWorkerLeases(t *testing.T, e *workerEnv, followers []string) {
	n := e.leader()
	a := e.dispatch(t, "ls-a", "w1", 1)
	b := e.dispatch(t, "ls-b", "w1", 1)
	n.life.PublishView(&lifecycle.View{Index: 100, Leases: map[string][]*fsm.WorkflowState{"w1": {e.workflow(t, b), e.workflow(t, a)}}})

	get := func(node, worker, query string) (api.LeaseList, time.Duration) {
		t.Helper()
		start := time.Now()
		r := e.call(node, "GET", "/v1/workers/"+worker+"/leases"+query, "")
		if r.status != http.StatusOK {
			t.Fatalf("leases%s via %s: %d %s", query, node, r.status, r.body)
		}
		if !strings.Contains(string(r.body), `"leases":[`) {
			t.Fatalf("leases is not a list: %s", r.body)
		}
		var ll api.LeaseList
		r.decode(t, &ll)
		return ll, time.Since(start)
	}
	// A view newer than index: at once, from any node, in workflow order.
	for _, node := range []string{e.lead, followers[0], "g2"} {
		ll, took := get(node, "w1", "?index=0&wait=30s")
		if ll.Index != 100 || len(ll.Leases) != 2 || ll.Leases[0].Workflow != a || ll.Leases[1].Workflow != b || took > 10*time.Second {
			t.Fatalf("leases via %s: %+v after %s", node, ll, took)
		}
		l, wf := ll.Leases[0], e.workflow(t, a)
		if l.JobID != e.jobID || l.Tenant != "acme" || l.Region != "use1" || l.Name != "ls-a" || l.Instance != 0 ||
			l.LeaseFence != 1 || l.LeaseUntil != wf.LeaseUntilMs || l.Spec != wf.Spec {
			t.Fatalf("lease %+v, ledger %+v", l, wf)
		}
	}
	// Another worker's leases: empty.
	if ll, _ := get(e.lead, "w2", "?wait=0s"); ll.Index != 100 || len(ll.Leases) != 0 {
		t.Fatalf("w2 leases: %+v", ll)
	}

	// No newer view: the current one, after the wait.
	const short = 300 * time.Millisecond
	ll, took := get(e.lead, "w1", "?index=100&wait="+short.String())
	if ll.Index != 100 || len(ll.Leases) != 2 || took < short {
		t.Fatalf("timed-out poll: %+v after %s", ll, took)
	}

	// A poll waiting on index 100 returns when a newer view is published.
	// The handler touches the worker's liveness before it waits, which
	// tells the test when to publish.
	type answer struct {
		ll   api.LeaseList
		took time.Duration
		err  error
	}
	done := make(chan answer, 1)
	sent := time.Now()
	go func() {
		req, _ := http.NewRequest("GET", "http://"+e.c.cfg(e.lead).HTTPAddr+"/v1/workers/w1/leases?index=100&wait=25s", nil)
		req.Header.Set("Authorization", "Bearer "+testAdminToken)
		resp, err := e.c.http.Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var ll api.LeaseList
		err = json.NewDecoder(resp.Body).Decode(&ll)
		done <- answer{ll, time.Since(sent), err}
	}()
	testkit.WaitUntil(t, "long poll waiting", func() bool { return !e.lastHeard("w1").Before(sent) })
	view := &lifecycle.View{Index: 101, Leases: map[string][]*fsm.WorkflowState{"w1": {e.workflow(t, a)}}}
	published := time.Now() // the poll answers, and renews liveness, after this
	n.life.PublishView(view)
	got := <-done
	if got.err != nil || got.ll.Index != 101 || len(got.ll.Leases) != 1 || got.ll.Leases[0].Workflow != a || got.took > 20*time.Second {
		t.Fatalf("long poll: %+v after %s (%v)", got.ll, got.took, got.err)
	}
	if heard := e.lastHeard("w1"); heard.Before(published) {
		t.Fatalf("the poll's answer did not renew liveness (last heard %s)", heard)
	}

	// A long wait through a follower is cut to what forwarding allows.
	ll, took = get(followers[1], "w1", "?index=101&wait=30s")
	if ll.Index != 101 || took < httpapi.MaxForwardedLeaseWait-time.Second || took > httpapi.MaxForwardedLeaseWait+5*time.Second {
		t.Fatalf("forwarded long poll: %+v after %s", ll, took)
	}

	for _, q := range []string{"?index=x", "?index=-1", "?wait=forever", "?wait=-1s", "?wait=31s"} {
		e.refused(t, e.lead, "GET", "/v1/workers/w1/leases"+q, "", 400, httpx.CodeBadRequest)
	}
	// A follower forwards a bad wait as it came, never cut to a valid one.
	e.refused(t, followers[1], "GET", "/v1/workers/w1/leases?wait=31s", "", 400, httpx.CodeBadRequest)
	e.refused(t, e.lead, "GET", "/v1/workers/nobody/leases?wait=0s", "", 404, api.CodeUnknownWorker)
}

func testWorkerProgress(t *testing.T, e *workerEnv) {
	a := e.dispatch(t, "pr-a", "w1", 3)
	b := e.dispatch(t, "pr-b", "w1", 1)
	other := e.dispatch(t, "pr-other", "w2", 1)
	ghost := e.jobID + "/use1/ghost/0"

	// Applied at REGIONAL, per workflow; the stale and foreign ones are
	// answered without failing the others.
	body := fmt.Sprintf(`{"updates":[
		{"workflow":%q,"lease_fence":3,"completed":10,"failed":1,"stats":{"requests":11,"errors":1}},
		{"workflow":%q,"lease_fence":2,"completed":5},
		{"workflow":%q,"lease_fence":1,"completed":5},
		{"workflow":%q,"lease_fence":1,"completed":5}]}`, a, b, other, ghost)
	before := e.workflow(t, b)
	res := e.report(t, "w1", "progress", "?durability=regional", body)
	wantResults(t, res, "applied", "rejected:stale_fence", "rejected:worker_mismatch", "rejected:unknown_workflow")
	if wf := e.workflow(t, a); wf.Completed != 10 || wf.Failed != 1 || wf.Stats.Get("requests") != 11 || wf.Status != fsm.WorkflowStatusLeased {
		t.Fatalf("after progress: %+v", wf)
	}
	if !reflect.DeepEqual(e.workflow(t, b), before) {
		t.Fatal("a stale update changed its workflow")
	}

	// Default: acknowledged at LOCAL, applied in the background; only
	// the refused update has a result.
	r := e.call(e.lead, "POST", "/v1/workers/w1/progress",
		fmt.Sprintf(`{"updates":[{"workflow":%q,"lease_fence":3,"completed":20},{"workflow":%q,"lease_fence":2}]}`, a, b))
	var out api.WorkerReportResponse
	r.decode(t, &out)
	if r.status != http.StatusOK || out.Durability != "LOCAL" || out.Session != "" {
		t.Fatalf("default progress: %d %s", r.status, r.body)
	}
	wantResults(t, out.Results, "rejected:stale_fence")
	if out.Results[0].Workflow != b {
		t.Fatalf("result for %s, want %s", out.Results[0].Workflow, b)
	}
	testkit.WaitUntil(t, "LOCAL progress applied", func() bool { return e.workflow(t, a).Completed == 20 })

	// Only stale updates: answered, nothing proposed.
	st := e.state(t)
	res = e.report(t, "w1", "progress", "", fmt.Sprintf(`{"updates":[{"workflow":%q,"lease_fence":1,"completed":1}]}`, a))
	wantResults(t, res, "rejected:stale_fence")
	if e.state(t) != st {
		t.Fatal("a request of stale updates only wrote something")
	}

	// Bad requests change nothing.
	for _, tt := range []struct {
		body   string
		status int
	}{
		{fmt.Sprintf(`{"updates":[{"workflow":%q,"lease_fence":3},{"workflow":%q,"lease_fence":3}]}`, a, a), 400},
		{`{"updates":[]}`, 400},
		{`{}`, 400},
		{fmt.Sprintf(`{"updates":[{"workflow":%q,"lease_fence":0}]}`, a), 400},
		{fmt.Sprintf(`{"updates":[{"workflow":%q,"lease_fence":3,"stats":{"bad name":1}}]}`, a), 400},
		{fmt.Sprintf(`{"updates":[{"workflow":%q,"lease_fence":3,"completed":-1}]}`, a), 400},
		{fmt.Sprintf(`{"updates":[{"workflow":%q,"lease_fence":3,"unknown":1}]}`, a), 400},
	} {
		e.refused(t, e.lead, "POST", "/v1/workers/w1/progress?durability=regional", tt.body, tt.status, "")
	}
	updates := make([]api.ProgressUpdate, httpapi.MaxProgressUpdates+1)
	for i := range updates {
		updates[i] = api.ProgressUpdate{Workflow: fmt.Sprintf("%s/use1/x/%d", e.jobID, i), LeaseFence: 1}
	}
	many, _ := json.Marshal(api.ProgressRequest{Updates: updates})
	e.refused(t, e.lead, "POST", "/v1/workers/w1/progress", string(many), 413, httpx.CodeTooLarge)
	e.refused(t, e.lead, "POST", "/v1/workers/nobody/progress", fmt.Sprintf(`{"updates":[{"workflow":%q,"lease_fence":3}]}`, a),
		404, api.CodeUnknownWorker)
	e.refused(t, e.lead, "POST", "/v1/workers/w1/progress?durability=global", fmt.Sprintf(`{"updates":[{"workflow":%q,"lease_fence":3}]}`, a),
		400, httpx.CodeBadRequest)
}

func testWorkerEnd(t *testing.T, e *workerEnv) {
	a := e.dispatch(t, "end-a", "w1", 1)
	b := e.dispatch(t, "end-b", "w1", 2)
	c := e.dispatch(t, "end-c", "w1", 1)

	// Bad requests first: nothing changes.
	for _, tt := range []struct {
		what, body string
		status     int
	}{
		{"fail", fmt.Sprintf(`{"workflow":%q,"lease_fence":2}`, b), 400},
		{"complete", fmt.Sprintf(`{"workflow":%q,"lease_fence":1,"error":"no"}`, a), 400},
		{"complete", fmt.Sprintf(`{"workflow":%q,"lease_fence":0}`, a), 400},
		{"complete", `{"lease_fence":1}`, 400},
		{"complete", fmt.Sprintf(`{"workflow":%q,"lease_fence":1,"stats":{"a b":1}}`, a), 400},
		{"fail", fmt.Sprintf(`{"workflow":%q,"lease_fence":2,"error":%q}`, b, strings.Repeat("e", fsm.MaxTextBytes+1)), 413},
	} {
		e.refused(t, e.lead, "POST", "/v1/workers/w1/"+tt.what, tt.body, tt.status, "")
	}

	// Complete with last counters: progress then completion, one write.
	res := e.report(t, "w1", "complete", "", fmt.Sprintf(`{"workflow":%q,"lease_fence":1,"completed":20,"failed":2,"stats":{"requests":22}}`, a))
	wantResults(t, res, "applied")
	if wf := e.workflow(t, a); wf.Status != fsm.WorkflowStatusCompleted || wf.Completed != 20 || wf.Failed != 2 || wf.Stats.Get("requests") != 22 {
		t.Fatalf("completed: %+v", wf)
	}
	// A retry is a duplicate; progress after the end is refused.
	st := e.state(t)
	wantResults(t, e.report(t, "w1", "complete", "", fmt.Sprintf(`{"workflow":%q,"lease_fence":1,"completed":20}`, a)), "duplicate")
	wantResults(t, e.report(t, "w1", "progress", "", fmt.Sprintf(`{"updates":[{"workflow":%q,"lease_fence":1,"completed":30}]}`, a)),
		"rejected:illegal_transition")
	wantResults(t, e.report(t, "w1", "fail", "", fmt.Sprintf(`{"workflow":%q,"lease_fence":1,"error":"late"}`, a)),
		"rejected:illegal_transition")
	if e.state(t) != st {
		t.Fatal("a retried or late report wrote something")
	}

	// Fail with an error; a stale fence is answered and changes nothing.
	wantResults(t, e.report(t, "w1", "fail", "", fmt.Sprintf(`{"workflow":%q,"lease_fence":1,"error":"old lease"}`, b)), "rejected:stale_fence")
	wantResults(t, e.report(t, "w1", "fail", "", fmt.Sprintf(`{"workflow":%q,"lease_fence":2,"error":"boom"}`, b)), "applied")
	if wf := e.workflow(t, b); wf.Status != fsm.WorkflowStatusFailed || wf.Error != "boom" {
		t.Fatalf("failed: %+v", wf)
	}
	// Another worker cannot end w1's lease.
	wantResults(t, e.report(t, "w2", "complete", "", fmt.Sprintf(`{"workflow":%q,"lease_fence":1}`, c)), "rejected:worker_mismatch")
	if wf := e.workflow(t, c); wf.Status != fsm.WorkflowStatusLeased {
		t.Fatalf("w2 ended w1's workflow: %+v", wf)
	}
}

func testWorkerDeregister(t *testing.T, e *workerEnv) {
	r := e.call("g1", "DELETE", "/v1/workers/w3", "")
	if r.status != http.StatusOK {
		t.Fatalf("deregister: %d %s", r.status, r.body)
	}
	if ws := e.worker(t, "w3"); ws == nil || ws.Active || ws.Reason != httpapi.WorkerLeftReason {
		t.Fatalf("after deregister: %+v", ws)
	}
	if !e.lastHeard("w3").IsZero() {
		t.Fatal("a deregistered worker is still tracked")
	}
	st := e.state(t)
	if r := e.call(e.lead, "DELETE", "/v1/workers/w3", ""); r.status != http.StatusOK {
		t.Fatalf("second deregister: %d %s", r.status, r.body)
	}
	if e.state(t) != st {
		t.Fatal("deregistering a departed worker wrote something")
	}
	e.refused(t, e.lead, "POST", "/v1/workers/w3/heartbeat", `{"running":[]}`, 404, api.CodeUnknownWorker)
	e.refused(t, e.lead, "DELETE", "/v1/workers/ghost", "", 404, api.CodeUnknownWorker)
	e.refused(t, e.lead, "DELETE", "/v1/workers/w3?durability=global", "", 400, httpx.CodeBadRequest)
	// A departed worker may register again.
	e.register(t, e.lead, "w3", 2, http.StatusCreated)
	if ws := e.worker(t, "w3"); ws == nil || !ws.Active || ws.Capacity != 2 {
		t.Fatalf("re-registered: %+v", ws)
	}
}

// testWorkerGoClient runs a worker's life through api.Client against a
// gate and a follower (every call forwarded).
func testWorkerGoClient(t *testing.T, e *workerEnv) {
	follower := e.c.followers(RoleManager)[0]
	cl, err := api.New(api.ClientConfig{Addrs: []string{e.c.cfg("g2").HTTPAddr, e.c.cfg(follower).HTTPAddr}, Token: testAdminToken})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), nodeTestWait)
	defer cancel()
	reg, _, err := cl.RegisterWorker(ctx, &api.RegisterWorkerRequest{WorkerID: "wc", Region: "use1", Capacity: 3})
	if err != nil || reg.WorkerID != "wc" {
		t.Fatalf("register: %+v %v", reg, err)
	}
	wf := e.dispatch(t, "client", "wc", 1)
	e.leader().life.PublishView(&lifecycle.View{Index: 200, Leases: map[string][]*fsm.WorkflowState{"wc": {e.workflow(t, wf)}}})
	ll, _, err := cl.Leases(ctx, "wc", 0, time.Second)
	if err != nil || ll.Index != 200 || len(ll.Leases) != 1 || ll.Leases[0].Workflow != wf {
		t.Fatalf("leases: %+v %v", ll, err)
	}
	hb, _, err := cl.Heartbeat(ctx, "wc", &api.HeartbeatRequest{Running: []api.RunningWorkflow{{Workflow: wf, LeaseFence: 1}}})
	if err != nil || len(hb.Stop) != 0 {
		t.Fatalf("heartbeat: %+v %v", hb, err)
	}
	pr, _, err := cl.ReportProgress(ctx, "wc", &api.ProgressRequest{Updates: []api.ProgressUpdate{{Workflow: wf, LeaseFence: 1, Completed: 4}}},
		api.WriteOptions{Durability: "regional"})
	if err != nil || len(pr.Results) != 1 || pr.Results[0].Outcome != "applied" {
		t.Fatalf("progress: %+v %v", pr, err)
	}
	done, _, err := cl.CompleteWorkflow(ctx, "wc", &api.WorkflowEndRequest{Workflow: wf, LeaseFence: 1, Completed: 5}, api.WriteOptions{})
	if err != nil || len(done.Results) != 1 || done.Results[0].Outcome != "applied" {
		t.Fatalf("complete: %+v %v", done, err)
	}
	if _, err := cl.DeregisterWorker(ctx, "wc"); err != nil {
		t.Fatalf("deregister: %v", err)
	}
	_, _, err = cl.Heartbeat(ctx, "wc", &api.HeartbeatRequest{})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || ae.Code != api.CodeUnknownWorker {
		t.Fatalf("heartbeat after deregister: %v", err)
	}
}

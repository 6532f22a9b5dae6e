package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/govern"
	"github.com/strata-ledger/strata/cluster/worker"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Governance of a region's dispatch on real nodes (issue 18 §5; subnet
// 128): retries with backoff, a breaker that trips on a failing job type
// and lets nothing of it be leased until it half-opens, and maintenance
// mode. Failures are deterministic: the workers' fault hook fails
// workflows by name and attempt, never by chance.

// govFault fails every attempt of workflows named "bad" and "doomed", and
// the first two attempts of workflows named "flaky".
func govFault(l api.Lease) string {
	switch {
	case l.Name == "bad", l.Name == "doomed":
		return "injected failure of " + l.Name
	case l.Name == "flaky" && max(l.Attempt, 1) <= 2:
		return fmt.Sprintf("injected failure of attempt %d", max(l.Attempt, 1))
	}
	return ""
}

// startGovWorkers runs n workers with govFault.
func startGovWorkers(t *testing.T, c *testCluster, n int, capacity uint32) {
	t.Helper()
	var addrs []string
	for _, id := range []string{"m1", "m2", "m3"} {
		addrs = append(addrs, c.cfg(id).HTTPAddr)
	}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	for i := range n {
		cl, err := api.New(api.ClientConfig{Addrs: addrs, Token: testAdminToken})
		if err != nil {
			t.Fatal(err)
		}
		r, err := worker.New(worker.Config{Client: cl, Region: "use1", Capacity: capacity, WorkerID: fmt.Sprintf("gw%d", i+1),
			Logger: slog.New(slog.DiscardHandler), ProgressInterval: 200 * time.Millisecond, LeaseWait: 2 * time.Second, Fault: govFault})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		wg.Go(func() { _ = r.Run(ctx) })
	}
}

// govJob submits a job of tenant acme with one workflow (name, count) of
// job type jobType and the given retry JSON ("" for none).
func govJob(t *testing.T, c *testCluster, jobType, name string, count int, retry string) string {
	t.Helper()
	ext := ""
	if jobType != "" {
		ext += fmt.Sprintf(`,"type":%q`, jobType)
	}
	if retry != "" {
		ext += `,"retry":` + retry
	}
	body := fmt.Appendf(nil, `{"tenant":"acme","regions":["use1"],"timeout":"10m"%s,`+
		`"workflows":[{"name":%q,"count":%d,"duration":"300ms","rate":20,"failure_ratio":0}]}`, ext, name, count)
	rep := c.call("g1", "POST", "/v1/jobs", testAcmeToken, body)
	if rep.status != http.StatusCreated {
		t.Fatalf("submit: %d %s", rep.status, rep.body)
	}
	var out api.SubmitJobResponse
	rep.decode(t, &out)
	return out.JobID
}

// regionalEvents returns the job's events in the regional leader's ledger.
func regionalEvents(t *testing.T, c *testCluster, jobID string) []*fsm.StoredEvent {
	t.Helper()
	page, err := c.node(c.leader(RoleManager)).ledger.JobEvents(fsm.EventQuery{Tenant: "acme", JobID: jobID, Limit: fsm.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	return page.Events
}

func countTypes(evs []*fsm.StoredEvent) map[fsm.EventType]int {
	n := map[fsm.EventType]int{}
	for _, e := range evs {
		n[e.Type]++
	}
	return n
}

// firstLeaseMs is the HLC wall time of the job's first WorkflowLeased in
// the regional ledger, 0 if none.
func firstLeaseMs(t *testing.T, c *testCluster, jobID string) int64 {
	for _, e := range regionalEvents(t, c, jobID) {
		if e.Type == fsm.TypeWorkflowLeased {
			return e.HLC.WallMs
		}
	}
	return 0
}

func breakerOn(t *testing.T, c *testCluster, node, token, jobType string) (api.Breaker, bool) {
	t.Helper()
	rep := c.call(node, "GET", "/v1/breakers?consistency=strong", token, nil)
	if rep.status != http.StatusOK {
		t.Fatalf("breakers: %d %s", rep.status, rep.body)
	}
	var l api.BreakerList
	rep.decode(t, &l)
	for _, b := range l.Breakers {
		if b.JobType == jobType {
			return b, true
		}
	}
	return api.Breaker{}, false
}

func TestGovernance(t *testing.T) {
	c := startNodes(t, 128, true, func(cfg *NodeConfig) {
		cfg.Breakers = BreakerConfig{Window: time.Minute, MinSamples: 5, FailureRate: 0.6, CoolDown: 4 * time.Second, Probes: 1}
		cfg.RetryDefaults = map[string]RetryConfig{"doomed-type": {MaxAttempts: 2, InitialBackoff: 50 * time.Millisecond}}
	})
	startGovWorkers(t, c, 2, 8)

	t.Run("a workflow that fails twice then succeeds completes on its third attempt", func(t *testing.T) {
		id := govJob(t, c, "flaky-type", "flaky", 1, `{"max_attempts":3,"initial_backoff":"100ms","max_backoff":"200ms"}`)
		waitStatus(t, c, id, fsm.JobStatusCompleted)
		wfs := workflowsOf(t, c, id)
		if len(wfs) != 1 {
			t.Fatalf("%d workflows", len(wfs))
		}
		w := wfs[0]
		if w.Status != fsm.WorkflowStatusCompleted || w.Attempt() != 3 || len(w.RetryHistory) != 2 {
			t.Fatalf("workflow %s: %s, attempt %d, history %+v", w.ID, w.Status, w.Attempt(), w.RetryHistory)
		}
		for i, h := range w.RetryHistory {
			if h.Attempt != uint32(i+1) || h.Cause != string(govern.CauseError) || !strings.Contains(h.Error, "injected failure") {
				t.Errorf("history entry %d: %+v", i, h)
			}
			if h.NotBeforeMs < h.FailedAt.WallMs+50 { // at least half the 100 ms initial backoff
				t.Errorf("history entry %d: retry not before %d, failed at %d: no backoff", i, h.NotBeforeMs, h.FailedAt.WallMs)
			}
		}
		// Each attempt ran the whole load; the region reports all three.
		per := w.Completed + w.Failed
		if per == 0 || w.PriorCompleted+w.PriorFailed != 2*per {
			t.Fatalf("counters: this attempt %d, the two before %d+%d", per, w.PriorCompleted, w.PriorFailed)
		}
		if r := jobOn(c, "g1", id).Regions[0]; r.Completed+r.Failed != 3*per {
			t.Fatalf("the region reports %d+%d simulated requests, want 3 attempts of %d", r.Completed, r.Failed, per)
		}
		n := countTypes(regionalEvents(t, c, id))
		if n[fsm.TypeWorkflowLeased] != 3 || n[fsm.TypeWorkflowFailed] != 2 || n[fsm.TypeWorkflowRetryScheduled] != 2 || n[fsm.TypeWorkflowCompleted] != 1 {
			t.Fatalf("regional history: %v", n)
		}
		// The history is visible through the API too (a gate forwards).
		var wl api.WorkflowList
		rep := c.call("g2", "GET", "/v1/jobs/"+id+"/workflows?consistency=strong", testAcmeToken, nil)
		if rep.status != http.StatusOK {
			t.Fatalf("workflows: %d %s", rep.status, rep.body)
		}
		if rep.decode(t, &wl); len(wl.Workflows) != 1 || len(wl.Workflows[0].RetryHistory) != 2 || wl.Workflows[0].Retries != 2 {
			t.Fatalf("workflows: %+v", wl)
		}
	})

	t.Run("the job fails when attempts run out (the type's default policy)", func(t *testing.T) {
		id := govJob(t, c, "doomed-type", "doomed", 1, "")
		waitStatus(t, c, id, fsm.JobStatusFailed)
		w := workflowsOf(t, c, id)[0]
		if w.Status != fsm.WorkflowStatusFailed || w.Attempt() != 2 {
			t.Fatalf("workflow: %s attempt %d", w.Status, w.Attempt())
		}
		f, ok := jobOn(c, "g1", id).Decision.Body.(*fsm.JobFailed)
		if !ok || !strings.Contains(f.Error, "attempt 2, attempts exhausted") {
			t.Fatalf("the failure does not say the attempts ran out: %+v", jobOn(c, "g1", id).Decision.Body)
		}
	})

	t.Run("a job type failing 60 percent trips its breaker; nothing of it is leased until half-open", func(t *testing.T) {
		var ids []string
		for _, name := range []string{"bad", "good", "bad", "good", "bad"} {
			ids = append(ids, govJob(t, c, "brittle", name, 1, ""))
		}
		for i, id := range ids {
			want := fsm.JobStatusCompleted
			if i%2 == 0 {
				want = fsm.JobStatusFailed
			}
			waitStatus(t, c, id, want)
		}
		var open api.Breaker
		c.waitFor("the brittle breaker open", func() bool {
			b, ok := breakerOn(t, c, "m1", testAcmeToken, "brittle")
			open = b
			return ok && b.State == "open"
		})
		if open.Tenant != "acme" || !strings.Contains(open.Why, "3 of the last 5") {
			t.Fatalf("open breaker: %+v", open)
		}
		probe := govJob(t, c, "brittle", "good", 1, "")
		waitStatus(t, c, probe, fsm.JobStatusCompleted)
		leased := firstLeaseMs(t, c, probe)
		if leased < open.Since+(4*time.Second).Milliseconds() {
			t.Fatalf("leased at %d, %d ms after the breaker opened at %d: before its 4 s cool-down", leased, leased-open.Since, open.Since)
		}
		c.waitFor("the brittle breaker closed by its probe", func() bool {
			b, ok := breakerOn(t, c, "m2", testAdminToken, "brittle")
			return ok && b.State == "closed"
		})
		// The metrics say so (on the managers that led meanwhile).
		for _, want := range []string{`strata_breaker_transitions_total{to="open"}`, `strata_breaker_transitions_total{to="closed"}`,
			`strata_breaker_state{job_type="brittle",tenant="acme"} 0`, `strata_workflow_retries_total{cause="worker_error"}`} {
			c.waitFor("a manager's metrics showing "+want, func() bool {
				for _, m := range []string{"m1", "m2", "m3"} {
					if strings.Contains(string(c.call(m, "GET", "/metrics", "", nil).body), want) {
						return true
					}
				}
				return false
			})
		}
		// Another tenant sees none of acme's breakers.
		if _, ok := breakerOn(t, c, "g1", testGlobexToken, "brittle"); ok {
			t.Fatal("globex sees acme's breaker")
		}
	})

	t.Run("operators force a breaker open and closed, audited; bad requests change nothing", func(t *testing.T) {
		path := "/v1/breakers/acme/steady/"
		for _, bad := range []struct {
			token, path, body string
			status            int
		}{
			{testAdminToken, path + "open", `{"reason":"r"}`, http.StatusBadRequest},
			{testAdminToken, path + "ajar", `{"reason":"r","ticket":"T-1"}`, http.StatusBadRequest},
			{testAdminToken, "/v1/breakers/acme/bad%20type/open", `{"reason":"r","ticket":"T-1"}`, http.StatusBadRequest},
			{testAdminToken, path + "open", `{"reason":"r","ticket":"T-1","extra":1}`, http.StatusBadRequest},
			{testAcmeToken, path + "open", `{"reason":"r","ticket":"T-1"}`, http.StatusForbidden},
			{testGlobexToken, path + "open", `{"reason":"r","ticket":"T-1"}`, http.StatusForbidden},
		} {
			if rep := c.call("m1", "POST", bad.path, bad.token, []byte(bad.body)); rep.status != bad.status {
				t.Errorf("POST %s %s: %d %s, want %d", bad.path, bad.body, rep.status, rep.body, bad.status)
			} else {
				rep.apiError(t)
			}
		}
		if _, ok := breakerOn(t, c, "m1", testAdminToken, "steady"); ok {
			t.Fatal("a refused request left a breaker")
		}
		rep := c.call("g1", "POST", path+"open", testAdminToken, []byte(`{"reason":"bad build","ticket":"OPS-42"}`))
		if rep.status != http.StatusOK {
			t.Fatalf("force open: %d %s", rep.status, rep.body)
		}
		b, _ := breakerOn(t, c, "m3", testAdminToken, "steady")
		if b.State != "open" || !b.Forced || b.Ticket != "OPS-42" || !strings.Contains(b.Why, "bad build") {
			t.Fatalf("forced breaker: %+v", b)
		}
		held := govJob(t, c, "steady", "good", 1, "")
		c.waitFor("the held job's workflow dispatched", func() bool { return len(workflowsOf(t, c, held)) == 1 })
		// A job of another type runs meanwhile: the passes that lease it
		// visit the held job too, and must leave it alone.
		control := govJob(t, c, "control", "good", 1, "")
		waitStatus(t, c, control, fsm.JobStatusCompleted)
		if w := workflowsOf(t, c, held)[0]; w.Status != fsm.WorkflowStatusDispatched {
			t.Fatalf("the held workflow is %s under a breaker forced open", w.Status)
		}
		// A leader change keeps the breaker: it is state of the region's ledger.
		old := c.leader(RoleManager)
		c.stop(old)
		if b, _ := breakerOn(t, c, c.leader(RoleManager), testAdminToken, "steady"); b.State != "open" || !b.Forced {
			t.Fatalf("after the leader %s stopped: %+v", old, b)
		}
		c.start(old)
		c.waitReady(old)
		rep = c.call("g1", "POST", path+"close", testAdminToken, []byte(`{"reason":"fixed","ticket":"OPS-42"}`))
		if rep.status != http.StatusOK {
			t.Fatalf("force close: %d %s", rep.status, rep.body)
		}
		closed, _ := breakerOn(t, c, "m1", testAdminToken, "steady")
		waitStatus(t, c, held, fsm.JobStatusCompleted)
		if leased := firstLeaseMs(t, c, held); leased < closed.HLC.WallMs {
			t.Fatalf("leased at %d while forced open (closed at %d)", leased, closed.HLC.WallMs)
		}
	})

	t.Run("maintenance mode grants no lease while reads and status work", func(t *testing.T) {
		for _, bad := range []struct {
			token, body string
			status      int
		}{
			{testAdminToken, `{"region":"euw1","on":true,"reason":"r","ticket":"T"}`, http.StatusBadRequest},
			{testAdminToken, `{"region":"use1","on":true,"ticket":"T"}`, http.StatusBadRequest},
			{testAcmeToken, `{"region":"use1","on":true,"reason":"r","ticket":"T"}`, http.StatusForbidden},
		} {
			if rep := c.call("m2", "POST", "/v1/maintenance", bad.token, []byte(bad.body)); rep.status != bad.status {
				t.Errorf("POST maintenance %s: %d %s, want %d", bad.body, rep.status, rep.body, bad.status)
			}
		}
		rep := c.call("g2", "POST", "/v1/maintenance", testAdminToken, []byte(`{"region":"use1","on":true,"reason":"upgrade","ticket":"OPS-7"}`))
		if rep.status != http.StatusOK {
			t.Fatalf("maintenance on: %d %s", rep.status, rep.body)
		}
		id := govJob(t, c, "", "good", 2, "")
		c.waitFor("the job accepted and its workflows dispatched", func() bool {
			s := jobOn(c, "g1", id)
			return s != nil && s.Status == fsm.JobStatusRunning && len(workflowsOf(t, c, id)) == 2
		})
		// Reads and status calls answer while no lease is granted.
		for _, p := range []string{"/v1/jobs/" + id, "/v1/jobs/" + id + "/workflows", "/v1/jobs?tenant=acme"} {
			if rep := c.call("m3", "GET", p, testAcmeToken, nil); rep.status != http.StatusOK {
				t.Fatalf("GET %s in maintenance: %d %s", p, rep.status, rep.body)
			}
		}
		var st api.ClusterStatus
		if rep := c.call("m1", "GET", api.PathClusterStatus, testAdminToken, nil); rep.status != http.StatusOK {
			t.Fatalf("status: %d %s", rep.status, rep.body)
		} else if rep.decode(t, &st); st.Maintenance == nil || !st.Maintenance.On || st.Maintenance.Ticket != "OPS-7" {
			t.Fatalf("status in maintenance: %+v", st.Maintenance)
		}
		for _, w := range workflowsOf(t, c, id) {
			if w.Status != fsm.WorkflowStatusDispatched {
				t.Fatalf("%s is %s in maintenance", w.ID, w.Status)
			}
		}
		rep = c.call("m1", "POST", "/v1/maintenance", testAdminToken, []byte(`{"region":"use1","on":false,"reason":"done","ticket":"OPS-7"}`))
		if rep.status != http.StatusOK {
			t.Fatalf("maintenance off: %d %s", rep.status, rep.body)
		}
		var off api.MaintenanceResponse
		rep.decode(t, &off)
		waitStatus(t, c, id, fsm.JobStatusCompleted)
		if leased := firstLeaseMs(t, c, id); leased < off.HLC.WallMs {
			t.Fatalf("a lease at %d, before maintenance ended at %d", leased, off.HLC.WallMs)
		}
	})
}

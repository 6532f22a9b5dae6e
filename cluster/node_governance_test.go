package cluster

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/cluster/quota"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Issue 18 §5, the global half, on real nodes (subnet 125, reconcilers
// and workers running): a tenant over max_active gets 429 with
// Retry-After and the limit; a queued job is admitted when a slot frees
// and completes; a replay creates a linked job that completes; a throttle
// holds a tenant's new work until resumed; quota changes survive a gate
// leader kill.
func TestNode_Governance(t *testing.T) {
	c := startLifecycleCluster(t, 125)
	startWorkers(t, c, 2, 4)

	gov := func(id, method, path string, body string) reply {
		t.Helper()
		return c.call(id, method, path, testAdminToken, []byte(body))
	}
	policyOnAllGates := func(kind, key string, present bool) {
		t.Helper()
		c.waitFor(fmt.Sprintf("policy %s/%s present=%v on every gate", kind, key, present), func() bool {
			for _, g := range []string{"g1", "g2", "g3"} {
				n := c.node(g)
				if n == nil {
					continue
				}
				p, err := n.ledger.Policy(kind, key)
				if err != nil || (p != nil) != present {
					return false
				}
			}
			return true
		})
	}
	submit := func(body string) reply {
		t.Helper()
		return c.call("g1", "POST", "/v1/jobs", testAcmeToken, []byte(body))
	}
	job := func(extra string) string {
		return `{"tenant":"acme","regions":["use1"],"timeout":"5m",` + extra +
			`"workflows":[{"name":"load","count":1,"duration":"1s","rate":50,"failure_ratio":0}]}`
	}
	onG1 := func(id string) {
		t.Helper()
		c.waitFor("job "+id+" on g1", func() bool { return jobOn(c, "g1", id) != nil })
	}

	t.Run("bad policy changes are 400 and change nothing", func(t *testing.T) {
		for name, body := range map[string]string{
			"no reason":       `{"tenant":"acme","max_active":1,"ticket":"T-1"}`,
			"no ticket":       `{"tenant":"acme","max_active":1,"reason":"r"}`,
			"id mismatch":     `{"tenant":"globex","max_active":1,"reason":"r","ticket":"T-1"}`,
			"no limit":        `{"tenant":"acme","reason":"r","ticket":"T-1"}`,
			"unknown field":   `{"tenant":"acme","max_active":1,"reason":"r","ticket":"T-1","nope":1}`,
			"over its bounds": `{"tenant":"acme","max_active":2000000,"reason":"r","ticket":"T-1"}`,
		} {
			if r := gov("g2", "PUT", "/v1/quotas/policies/acme", body); r.status != http.StatusBadRequest {
				t.Fatalf("%s: %d %s", name, r.status, r.body)
			}
		}
		// A tenant token may not change quotas, even its own.
		if r := c.call("g1", "PUT", "/v1/quotas/policies/acme", testAcmeToken,
			[]byte(`{"tenant":"acme","max_active":100,"reason":"r","ticket":"T"}`)); r.status != http.StatusForbidden {
			t.Fatalf("tenant token: %d %s", r.status, r.body)
		}
		if ps, _ := c.node("g1").ledger.Policies(""); len(ps) != 0 {
			t.Fatalf("policies after refused changes: %+v", ps)
		}
	})

	var first string
	t.Run("over max_active: 429, or queued and admitted when a slot frees", func(t *testing.T) {
		if r := gov("g2", "PUT", "/v1/quotas/policies/acme", `{"tenant":"acme","max_active":1,"reason":"test","ticket":"T-18"}`); r.status != http.StatusOK {
			t.Fatalf("put policy: %d %s", r.status, r.body)
		}
		policyOnAllGates(quota.Kind, "acme", true)
		r := submit(job(""))
		if r.status != http.StatusCreated {
			t.Fatalf("first submit: %d %s", r.status, r.body)
		}
		var sub api.SubmitJobResponse
		r.decode(t, &sub)
		first = sub.JobID
		onG1(first)
		r = submit(job(""))
		if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
			t.Fatalf("second submit: %d (Retry-After %q) %s", r.status, r.header.Get("Retry-After"), r.body)
		}
		if e := r.apiError(t); e.Details["limit"] != "max_active" || e.Details["allowed"] != float64(1) {
			t.Fatalf("429 details %+v", e.Details)
		}
		r = submit(job(`"admission":"queue","priority":7,`))
		if r.status != http.StatusAccepted {
			t.Fatalf("queued submit: %d %s", r.status, r.body)
		}
		var queued api.SubmitJobResponse
		r.decode(t, &queued)
		if !queued.Queued || queued.Status != "PENDING" || queued.QueuedBy != "max_active" {
			t.Fatalf("queued answer %+v", queued)
		}
		onG1(queued.JobID)
		var st api.QuotaStatus
		sr := c.call("g1", "GET", "/v1/quotas/status?tenant=acme", testAcmeToken, nil)
		sr.decode(t, &st)
		if sr.status != http.StatusOK || len(st.Limits) != 1 || st.Limits[0].Allowed != 1 || st.Limits[0].Pending != 1 {
			t.Fatalf("status %d %+v", sr.status, st)
		}
		// Quota usage and refusals are in the gate's metrics.
		m := string(c.call("g1", "GET", "/metrics", "", nil).body)
		for _, want := range []string{`strata_quota_allowed_jobs{tenant="acme"} 1`, `strata_quota_queued_jobs{tenant="acme"} 1`,
			`strata_http_throttled_requests_total{reason="max_active"} 1`, `strata_http_throttled_requests_total{reason="queued"} 1`} {
			if !strings.Contains(m, want) {
				t.Errorf("g1 /metrics lacks %s", want)
			}
		}
		// The queued job waits while the first runs, then is admitted.
		waitStatus(t, c, first, fsm.JobStatusCompleted)
		waitStatus(t, c, queued.JobID, fsm.JobStatusCompleted)
		if s := jobOn(c, "g1", queued.JobID); !s.Spec.Held || !s.Admitted {
			t.Fatalf("queued job held %v admitted %v", s.Spec.Held, s.Admitted)
		}
	})

	t.Run("replay creates a linked job that completes", func(t *testing.T) {
		r := c.call("g3", "POST", "/v1/jobs/"+first+"/replay", testAcmeToken, []byte(`{"reason":"rerun after fix"}`))
		if r.status != http.StatusCreated {
			t.Fatalf("replay: %d %s", r.status, r.body)
		}
		var rep api.ReplayResponse
		r.decode(t, &rep)
		if rep.ReplayOf != first || rep.JobID == "" || rep.JobID == first {
			t.Fatalf("replay answer %+v", rep)
		}
		onG1(rep.JobID)
		g := c.call("g1", "GET", "/v1/jobs/"+rep.JobID, testAcmeToken, nil)
		var view struct {
			ReplayOf string      `json:"replay_of"`
			Spec     fsm.JobSpec `json:"spec"`
		}
		g.decode(t, &view)
		want, _ := c.node("g1").ledger.JobDigest("acme", first)
		if view.Spec.ReplayReason != "rerun after fix" {
			t.Fatalf("GET replay: replay_reason %q, want the call's reason", view.Spec.ReplayReason)
		}
		if view.ReplayOf != first || view.Spec.Priority < fsm.ReplayPriority || view.Spec.ReplayDigest == nil || *view.Spec.ReplayDigest != want {
			t.Fatalf("GET replay: replay_of %q priority %d digest %v (want %s)", view.ReplayOf, view.Spec.Priority, view.Spec.ReplayDigest, want)
		}
		waitStatus(t, c, rep.JobID, fsm.JobStatusCompleted)
		// A client cannot claim to be a replay.
		if r := submit(job(`"replay_of":"` + first + `",`)); r.status != http.StatusBadRequest {
			t.Fatalf("client replay_of: %d %s", r.status, r.body)
		}
	})

	t.Run("a throttle holds new work until resumed", func(t *testing.T) {
		if r := gov("g1", "DELETE", "/v1/quotas/policies/acme", `{"reason":"done","ticket":"T-19"}`); r.status != http.StatusOK {
			t.Fatalf("delete policy: %d %s", r.status, r.body)
		}
		policyOnAllGates(quota.Kind, "acme", false)
		if r := gov("g1", "POST", "/v1/throttles", `{"action":"pause","tenant":"acme","reason":"incident","ticket":"INC-7"}`); r.status != http.StatusOK {
			t.Fatalf("pause: %d %s", r.status, r.body)
		}
		policyOnAllGates("throttle", "t:acme", true)
		r := submit(job(""))
		var held api.SubmitJobResponse
		r.decode(t, &held)
		// Another tenant's job runs to completion meanwhile: the
		// reconciler ran many passes, and acme's job was not dispatched.
		other := c.call("g1", "POST", "/v1/jobs", testGlobexToken, []byte(`{"tenant":"globex","regions":["use1"],"timeout":"5m",`+
			`"workflows":[{"name":"load","count":1,"duration":"1s","rate":50,"failure_ratio":0}]}`))
		var o api.SubmitJobResponse
		other.decode(t, &o)
		waitStatus(t, c, o.JobID, fsm.JobStatusCompleted)
		if s := jobOn(c, "g1", held.JobID); s.Status != fsm.JobStatusPending || s.Regions[0].Accepted {
			t.Fatalf("paused tenant's job %s: %s accepted %v", held.JobID, s.Status, s.Regions[0].Accepted)
		}
		if r := gov("g2", "POST", "/v1/throttles", `{"action":"resume","tenant":"acme","reason":"fixed","ticket":"INC-7"}`); r.status != http.StatusOK {
			t.Fatalf("resume: %d %s", r.status, r.body)
		}
		waitStatus(t, c, held.JobID, fsm.JobStatusCompleted)
		if r := gov("g2", "POST", "/v1/throttles", `{"action":"resume","tenant":"acme","reason":"again","ticket":"INC-7"}`); r.status != http.StatusNotFound {
			t.Fatalf("resume of nothing: %d %s", r.status, r.body)
		}
		// The changes are in acme's audit chain, with reason and ticket.
		found := 0
		if _, err := c.node("g1").ledger.VerifyChain("acme"); err != nil {
			t.Fatal(err)
		}
		err := c.node("g1").ledger.View(func(tx fsm.ReadTx) error {
			return tx.ChainEvents("acme", 0, func(se *fsm.StoredEvent) error {
				if b, ok := se.Body.(*fsm.PolicySet); ok && b.Ticket != "" && b.Reason != "" {
					found++
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if found < 2 {
			t.Fatalf("acme's chain holds %d audited PolicySet events, want the quota and the pause", found)
		}
	})

	t.Run("quota changes survive a gate leader kill", func(t *testing.T) {
		if r := gov("g1", "PUT", "/v1/quotas/policies/globex:render", `{"tenant":"globex","job_type":"render","max_active":3,"reason":"cap","ticket":"T-20"}`); r.status != http.StatusOK {
			t.Fatalf("put: %d %s", r.status, r.body)
		}
		policyOnAllGates(quota.Kind, "globex:render", true)
		lead := c.leader(RoleGate)
		c.stop(lead)
		next := c.leader(RoleGate)
		if next == lead {
			t.Fatalf("leadership did not move from %s", lead)
		}
		var list api.QuotaList
		r := c.call(next, "GET", "/v1/quotas?consistency=strong", testAdminToken, nil)
		r.decode(t, &list)
		if r.status != http.StatusOK || len(list.Policies) != 1 || list.Policies[0].ID != "globex:render" || list.Policies[0].MaxActive != 3 {
			t.Fatalf("quotas on the new leader %s: %d %+v", next, r.status, list)
		}
		// The new leader takes changes, and the old one learns them back.
		if r := gov(next, "PUT", "/v1/quotas/fleet", `{"capacity":10,"strategy":"proportional","reason":"plan","ticket":"T-21"}`); r.status != http.StatusOK {
			t.Fatalf("fleet on the new leader: %d %s", r.status, r.body)
		}
		c.start(lead)
		c.waitReady(lead)
		policyOnAllGates(quota.FleetKind, quota.FleetKey, true)
		policyOnAllGates(quota.Kind, "globex:render", true)
	})
}

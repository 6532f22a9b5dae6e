package cluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/strata-ledger/strata/cluster/quota"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Issue 18 §1, max_per_hour exact across gates, on real nodes (subnet
// 129; reconcilers off, so nothing admits a held job behind the test's
// back): a tenant with max_per_hour 4 submitting 15 jobs at once through
// all three gates, at LOCAL and GLOBAL durability, rejecting or queueing,
// gets exactly 4 jobs admissible within the hour; every other submit was
// refused (429 with Retry-After) or is queued (GET shows it). Every gate
// holds the same meter. A repeat of an idempotency key takes no token.
// Killing the gate leader, and restarting it, refills nothing: the next
// submits through any gate are refused or queued.
func TestNode_MaxPerHourExactAcrossGates(t *testing.T) {
	c := startTestCluster(t, 129)
	gates := []string{"g1", "g2", "g3"}
	const perHour = 4
	if r := c.call("g2", "PUT", "/v1/quotas/policies/acme", testAdminToken,
		fmt.Appendf(nil, `{"tenant":"acme","max_per_hour":%d,"reason":"test","ticket":"T-18"}`, perHour)); r.status != http.StatusOK {
		t.Fatalf("put policy: %d %s", r.status, r.body)
	}
	c.waitFor("the policy on every gate", func() bool {
		for _, g := range gates {
			if p, err := c.node(g).ledger.Policy(quota.Kind, "acme"); err != nil || p == nil {
				return false
			}
		}
		return true
	})
	body := func(key, admission string) []byte {
		return fmt.Appendf(nil, `{"tenant":"acme","idempotency_key":%q,%s"regions":["use1"],"timeout":"10m",`+
			`"workflows":[{"name":"load","count":1,"duration":"1s","rate":10,"failure_ratio":0}]}`, key, admission)
	}
	var (
		mu       sync.Mutex
		accepted []string // job ids of 201 and 202 answers
		refused  int
	)
	// outcome files one submit's answer: a job (created or queued), or a
	// 429 of max_per_hour with Retry-After.
	outcome := func(what string, r reply) {
		var sub api.SubmitJobResponse
		switch r.status {
		case http.StatusCreated, http.StatusAccepted:
			if err := json.Unmarshal(r.body, &sub); err != nil || sub.JobID == "" {
				t.Errorf("%s: %d %s (%v)", what, r.status, r.body, err)
				return
			}
			mu.Lock()
			accepted = append(accepted, sub.JobID)
			mu.Unlock()
		case http.StatusTooManyRequests:
			if r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), `"limit":"max_per_hour"`) {
				t.Errorf("%s: 429 without Retry-After or the limit: %s", what, r.body)
			}
			mu.Lock()
			refused++
			mu.Unlock()
		default:
			t.Errorf("%s: %d %s", what, r.status, r.body)
		}
	}
	// One keyed submit first: it takes the first token.
	first := c.call("g1", "POST", "/v1/jobs", testAcmeToken, body("first", ""))
	if first.status != http.StatusCreated {
		t.Fatalf("first submit: %d %s", first.status, first.body)
	}
	var firstSub api.SubmitJobResponse
	first.decode(t, &firstSub)
	accepted = append(accepted, firstSub.JobID)
	// Then 14 at once, through every gate, at both levels, both modes.
	var wg sync.WaitGroup
	for i := range 14 {
		g := gates[i%3]
		query, admission := "", ""
		if i%2 == 0 {
			query = "?durability=local"
		}
		if i%4 == 1 {
			admission = `"admission":"queue",`
		}
		wg.Go(func() {
			outcome(fmt.Sprintf("submit %d at %s%s", i, g, query),
				c.call(g, "POST", "/v1/jobs"+query, testAcmeToken, body(fmt.Sprintf("k%d", i), admission)))
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	exact := func(phase string, want int) {
		t.Helper()
		waitJobsOnGates(t, c, accepted)
		var meters []*fsm.Meter
		for _, g := range gates {
			n := c.node(g)
			if n == nil {
				continue
			}
			admissible, queued := 0, 0
			for _, id := range accepted {
				if jobOn(c, g, id).Queued() {
					queued++
				} else {
					admissible++
				}
			}
			if admissible != perHour || queued != want {
				t.Fatalf("%s: %s holds %d admissible and %d queued jobs of the %d accepted (%d refused), want exactly %d admissible",
					phase, g, admissible, queued, len(accepted), refused, perHour)
			}
			ms, err := n.ledger.Meters()
			if err != nil || len(ms) != 1 {
				t.Fatalf("%s: %s meters %+v (%v)", phase, g, ms, err)
			}
			if meters != nil && !reflect.DeepEqual(ms, meters) {
				t.Fatalf("%s: %s meter %+v, another gate's %+v", phase, g, ms[0], meters[0])
			}
			meters = ms
		}
		// A queued job says so on GET, through any gate.
		for _, id := range accepted {
			var st struct {
				Queued bool `json:"queued"`
			}
			r := c.call(c.leader(RoleGate), "GET", "/v1/jobs/"+id, testAcmeToken, nil)
			r.decode(t, &st)
			if st.Queued != jobOn(c, c.leader(RoleGate), id).Queued() {
				t.Fatalf("%s: GET %s says queued %v", phase, id, st.Queued)
			}
		}
	}
	exact("15 submits through 3 gates", len(accepted)-perHour)
	t.Logf("15 submits: %d refused (429), %d accepted, %d of them queued", refused, len(accepted), len(accepted)-perHour)
	if refused+len(accepted) != 15 {
		t.Fatalf("%d refused + %d accepted of 15", refused, len(accepted))
	}

	// A repeat of the first key, through another gate: the same job, no
	// token taken.
	before, _ := c.node("g3").ledger.Meters()
	if r := c.call("g3", "POST", "/v1/jobs", testAcmeToken, body("first", "")); r.status != http.StatusOK || !strings.Contains(string(r.body), firstSub.JobID) {
		t.Fatalf("a repeated key: %d %s", r.status, r.body)
	}
	if after, _ := c.node("g3").ledger.Meters(); !reflect.DeepEqual(after, before) {
		t.Fatalf("a repeated key moved the meter: %+v -> %+v", before[0], after[0])
	}

	// Kill the gate leader: the new leader's ledger has the same meter,
	// so nothing was refilled: every gate's fast path refuses now (each
	// has applied every job above, so its meter is the ledger's).
	lead := c.leader(RoleGate)
	c.stop(lead)
	next := c.leader(RoleGate)
	for i, g := range gates {
		if c.node(g) == nil {
			continue
		}
		r := c.call(g, "POST", "/v1/jobs", testAcmeToken, body(fmt.Sprintf("after-kill-%d", i), ""))
		if r.status != http.StatusTooManyRequests {
			t.Fatalf("after the leader kill, at %s: %d %s, want 429", g, r.status, r.body)
		}
		outcome("after the leader kill at "+g, r)
	}
	exact("after killing the leader "+lead+" (now "+next+")", len(accepted)-perHour)

	// Restart it: it catches up from its log and snapshot, and its
	// submits wait their turn too (a queued submit is held for its token).
	c.start(lead)
	c.waitReady(lead)
	waitJobsOnGates(t, c, accepted)
	r := c.call(lead, "POST", "/v1/jobs", testAcmeToken, body("after-restart", `"admission":"queue",`))
	var held api.SubmitJobResponse
	r.decode(t, &held)
	if r.status != http.StatusAccepted || !held.Queued || held.QueuedBy != "max_per_hour" || held.NextEligibleAt == "" {
		t.Fatalf("at the restarted %s: %d %s, want queued for max_per_hour", lead, r.status, r.body)
	}
	outcome("at the restarted "+lead, r)
	exact("after restarting "+lead, len(accepted)-perHour)
}

// waitJobsOnGates waits until every running gate has applied every job.
func waitJobsOnGates(t *testing.T, c *testCluster, ids []string) {
	t.Helper()
	c.waitFor(fmt.Sprintf("%d jobs on every gate", len(ids)), func() bool {
		for _, g := range []string{"g1", "g2", "g3"} {
			if c.node(g) == nil {
				continue
			}
			for _, id := range ids {
				if jobOn(c, g, id) == nil {
					return false
				}
			}
		}
		return true
	})
}

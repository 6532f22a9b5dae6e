package cluster

import (
	"net/http"
	"testing"

	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/cluster/regionsync"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// The region's reports that never reached the global ledger (as if the
// forwarder lost them while advancing its position) are found by one
// regional ↔ global round and sent again through the normal delivery; the
// global job then shows them, and the next round exchanges only the
// roots. (Issue 13; subnet 230. The reconcilers are off, so nothing but
// the round carries the region's events.)
func TestRegionSync_LostReportsAreFoundAndSentAgain(t *testing.T) {
	c := startTestCluster(t, 230)
	ctx := testkit.Ctx(t)
	r := c.submitJob("g1", "", "")
	var sub api.SubmitJobResponse
	r.decode(t, &sub)
	if r.status != http.StatusCreated {
		t.Fatalf("submit: %d %s", r.status, r.body)
	}
	gate := c.node(c.leader(RoleGate))
	var created *fsm.StoredEvent
	c.waitFor("the job on the gate leader", func() bool {
		s, err := gate.ledger.JobByID(sub.JobID)
		if err != nil {
			return false
		}
		created, err = gate.ledger.Event(s.Tenant, s.Created.ID)
		return err == nil
	})
	mgr := c.node(c.leader(RoleManager))
	propose := func(events ...fsm.Event) {
		t.Helper()
		batch, err := fsm.EncodeBatch(events)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mgr.prop.Propose(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	propose(created.Event) // the delivery the gates' reconciler would make
	var reports []fsm.Event
	for _, b := range []fsm.Body{&fsm.JobAccepted{Region: "use1", WorkerCount: 3},
		&fsm.JobProgressReported{Region: "use1", Completed: 40, Failed: 2}} {
		e := fsm.Event{Type: b.EventType(), JobID: sub.JobID, Tenant: "acme", Fence: 1, Body: b}
		if err := mgr.stamper.Own(&e); err != nil {
			t.Fatal(err)
		}
		reports = append(reports, e)
	}
	propose(reports...)
	// A second job the gates never delivered to the region.
	r = c.submitJob("g1", "", "")
	var undelivered api.SubmitJobResponse
	r.decode(t, &undelivered)
	c.waitFor("the second job on every gate", func() bool {
		for _, g := range []string{"g1", "g2", "g3"} {
			if _, err := c.node(g).ledger.JobByID(undelivered.JobID); err != nil {
				return false
			}
		}
		return true
	})

	st, err := mgr.regionSync.Round(ctx)
	if err != nil || st.Differences != 2 || st.Repaired != 2 {
		t.Fatalf("first round: %+v %v", st, err)
	}
	c.waitFor("the region holds the job it was never delivered", func() bool {
		_, err := mgr.ledger.JobByID(undelivered.JobID)
		return err == nil
	})
	c.waitFor("the global job shows the region's reports", func() bool {
		s, err := gate.ledger.JobByID(sub.JobID)
		return err == nil && s.Regions[0].Accepted && s.Regions[0].Completed == 40 && s.Regions[0].WorkerCount == 3
	})
	var last regionsync.Status
	c.waitFor("a round that finds the views equal", func() bool {
		last, err = mgr.regionSync.Round(ctx)
		return err == nil && last.Differences == 0 && last.RootsEqual
	})
	// Equal views exchange only the roots: one request, one page.
	if last.Bytes > 256 {
		t.Fatalf("a round over equal views exchanged %d bytes", last.Bytes)
	}
	// A round that ran before the answering gate applied the repair sends
	// it again: harmless, the global ledger keeps each event once.
	if v := testkit.MetricValue(t, mgr.reg, "strata_antientropy_repairs_total", "kind", "regional-global"); v < 1 {
		t.Fatalf("repairs_total{regional-global} = %v", v)
	}
	s, err := gate.ledger.JobByID(sub.JobID)
	if err != nil || s.Events != 3 {
		t.Fatalf("the global job holds %d events (JobCreated and the two reports, once each): %v", s.Events, err)
	}

	// The API: a run from any node (a manager forwards it to a gate)
	// answers once the region's round is done, with every pair.
	r = c.call("m2", "POST", "/v1/cluster/antientropy/run", testAdminToken, nil)
	var ae api.AntiEntropyStatus
	r.decode(t, &ae)
	if r.status != http.StatusOK {
		t.Fatalf("run: %d %s", r.status, r.body)
	}
	kinds := map[string]api.AntiEntropyPair{}
	for _, p := range ae.Pairs {
		kinds[p.Kind+"/"+p.Group] = p
	}
	rg, ok := kinds["regional-global/use1"]
	if !ok || rg.Rounds <= last.Rounds || !rg.RootsEqual || rg.Differences != 0 {
		t.Fatalf("regional-global pair after a run: %+v (%s)", rg, r.body)
	}
	for _, g := range []string{"replica/global", "replica/use1"} {
		if p, ok := kinds[g]; !ok || !p.RootsEqual {
			t.Fatalf("%s: %+v (%s)", g, p, r.body)
		}
	}
	if len(ae.DivergentReplicas) != 0 || len(ae.Unreachable) != 0 {
		t.Fatalf("divergent %v, unreachable %v", ae.DivergentReplicas, ae.Unreachable)
	}
	if r := c.call("g2", "GET", "/v1/cluster/antientropy", testAcmeToken, nil); r.status != http.StatusForbidden {
		t.Fatalf("status with a tenant token: %d", r.status)
	}
}

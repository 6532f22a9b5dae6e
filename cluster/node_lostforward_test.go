package cluster

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// A regional forwarder that loses a job's events on their way to the
// gates while advancing its position (fault injection) leaves the job
// stuck in the global ledger: the region finished it, the gates never
// heard. One regional ↔ global round finds the job and sends its events
// again through the normal delivery; the job then completes, and the
// global view of the region equals the region's own. (Issue 13; subnet
// 246.)
func TestLostForward_IsFoundAndRepairedByOneRound(t *testing.T) {
	c := startLifecycleCluster(t, 246)
	startWorkers(t, c, 1, 4)
	id := lifecycleJob(t, c, 2, "2s", "10m")
	mgr := c.leader(RoleManager)
	rules := []byte(`{"wan_latency":"0s","peers":[],"forwarder_lose_jobs":["` + id + `"]}`)
	if r := c.call(mgr, "PUT", "/v1/debug/faults", testAdminToken, rules); r.status != http.StatusOK {
		t.Fatalf("fault: %d %s", r.status, r.body)
	}
	regional := func() *fsm.JobState { return jobOn(c, mgr, id) }
	c.waitFor("the region finished the job", func() bool {
		s := regional()
		return s != nil && s.Regions[0].Done
	})
	if s := jobOn(c, c.leader(RoleGate), id); s != nil && s.Regions[0].Done {
		t.Fatalf("the global ledger heard of the region's end despite the lost forward: %+v", s.Regions[0])
	}

	r := c.call("g1", "POST", "/v1/cluster/antientropy/run", testAdminToken, nil)
	var st api.AntiEntropyStatus
	r.decode(t, &st)
	if r.status != http.StatusOK {
		t.Fatalf("run: %d %s", r.status, r.body)
	}
	var pair api.AntiEntropyPair
	for _, p := range st.Pairs {
		if p.Kind == api.AntiEntropyRegionalGlobal && p.Region == "use1" {
			pair = p
		}
	}
	if pair.Differences < 1 || pair.Repaired < 1 {
		t.Fatalf("the round found %d differences, repaired %d: %s", pair.Differences, pair.Repaired, r.body)
	}
	waitStatus(t, c, id, fsm.JobStatusCompleted)
	want, _, err := fsm.RegionDigest(regional(), "use1")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"g1", "g2", "g3"} {
		got, _, err := fsm.RegionDigest(jobOn(c, g, id), "use1")
		if err != nil || !bytes.Equal(got[:], want[:]) {
			t.Fatalf("%s's view of use1 differs from the region's: %+v vs %+v", g, jobOn(c, g, id).Regions[0], regional().Regions[0])
		}
	}
}

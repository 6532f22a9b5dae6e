package cluster

import (
	"net/http"
	"testing"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/transport/api"
)

// A group that lost its majority for good comes back with the servers it
// has left: two of the three gates are gone, the last one's Raft state
// is recovered to itself alone (strata raft recover), and it leads and
// takes writes again, with the jobs it held. (Issue 15; subnet 254.)
func TestRecoverGroup_TheLastGateLeadsAlone(t *testing.T) {
	c := startTestCluster(t, 254)
	r := c.submitJob("g1", "", "")
	var before api.SubmitJobResponse
	r.decode(t, &before)
	if r.status != http.StatusCreated {
		t.Fatalf("submit: %d %s", r.status, r.body)
	}
	c.waitFor("g3 holds the job", func() bool { _, err := c.node("g3").ledger.JobByID(before.JobID); return err == nil })
	for _, id := range []string{"g1", "g2", "g3"} {
		c.stop(id) // g1 and g2 are lost for good; g3 is stopped to recover
	}
	cfg := c.cfg("g3")
	if err := RecoverGroup(cfg, nil); err == nil {
		t.Fatal("recover without servers accepted")
	}
	if err := RecoverGroup(cfg, []group.Server{{ID: "g3", Addr: cfg.RaftAddr}}); err != nil {
		t.Fatal(err)
	}
	c.start("g3")
	c.waitReady("g3")
	if _, err := c.node("g3").ledger.JobByID(before.JobID); err != nil {
		t.Fatalf("the recovered gate lost the job: %v", err)
	}
	if r := c.submitJob("g3", "", ""); r.status != http.StatusCreated {
		t.Fatalf("submit after the recovery: %d %s", r.status, r.body)
	}
}

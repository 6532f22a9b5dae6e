package cluster

import (
	"net/http"
	"testing"

	"github.com/strata-ledger/strata/transport/api"
)

// A cancel on the gates' leader waits while a decision of its job is in
// flight there (docs/CHAOS.md, finding 2): it reads the job only once
// that decision has been written, so it can never be admitted against a
// state the decision is about to end. The hold stands in for the
// reconciler's completion; released, the cancel goes on. (Subnet 159.)
func TestCancel_WaitsForADecisionInFlightOnTheLeader(t *testing.T) {
	c := startTestCluster(t, 159)
	r := c.submitJob("g1", "?durability=global", "")
	var job api.SubmitJobResponse
	r.decode(t, &job)
	if r.status != http.StatusCreated {
		t.Fatalf("submit: %d %s", r.status, r.body)
	}
	leader := c.leader(RoleGate)
	dec := c.node(leader).decisive
	release, ok := dec.TryAcquire(job.JobID)
	if !ok {
		t.Fatal("the job had a decision in flight already")
	}
	done := make(chan reply, 1)
	go func() {
		done <- c.call(leader, "POST", "/v1/jobs/"+job.JobID+"/cancel", testAcmeToken, []byte(`{"reason":"finding 2"}`))
	}()
	c.waitFor("the cancel to wait for the decision", func() bool { return dec.Waiting() == 1 })
	if s, err := c.node(leader).ledger.JobByID(job.JobID); err != nil || s.Status.String() == "CANCELLING" {
		t.Fatalf("the cancel went ahead of the decision in flight: %v %v", s.Status, err)
	}
	release()
	if r := <-done; r.status != http.StatusOK {
		t.Fatalf("cancel after the decision: %d %s", r.status, r.body)
	}
	s, err := c.node(leader).ledger.JobByID(job.JobID)
	if err != nil || s.Status.String() != "CANCELLING" && s.Status.String() != "CANCELLED" {
		t.Fatalf("after the cancel: %v %v", s, err)
	}
	if dec.Busy() != 0 {
		t.Fatalf("the cancel left %d jobs held", dec.Busy())
	}
}

package cluster

import (
	"context"
	"testing"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// A follower's pipeline asks, before retrying a record, whether its batch
// is already in the ledger (batchApplied): yes once the events are applied
// here, with duplicate outcomes and an applied index at or above their
// entry's; no for a batch not applied, one applied only in part, or one
// whose event id is taken by another event. (Issue 16 §2; subnet 119.)
func TestNode_BatchAppliedAnswersForTheFollowersLedger(t *testing.T) {
	c := startTestCluster(t, 119)
	id := c.followers(RoleManager)[0]
	n := c.node(id)
	events := fsmtest.JobsCreated(0, 3, "acme", "use1")
	batch, err := fsm.EncodeBatch(events)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := n.batchApplied(batch); ok {
		t.Fatal("a batch never submitted counts as applied")
	}
	ctx, cancel := context.WithTimeout(context.Background(), nodeTestWait)
	defer cancel()
	res, err := n.pipe.Submit(ctx, events, commit.DurabilityRegional)
	if err != nil {
		t.Fatal(err)
	}
	c.waitFor(id+" applied the batch", func() bool { return n.ledger.AppliedIndex() >= res.Index })
	out, ok := n.batchApplied(batch)
	if !ok || out.Index < res.Index || len(out.Results) != len(events) {
		t.Fatalf("applied batch: %+v %v; want index at least %d and %d results", out, ok, res.Index, len(events))
	}
	for i, r := range out.Results {
		if r.Outcome != fsm.OutcomeDuplicate || r.Seq != res.Results[i].Seq || r.JobID != events[i].JobID {
			t.Errorf("result %d: %+v, want a duplicate of seq %d", i, r, res.Results[i].Seq)
		}
	}
	partial, err := fsm.EncodeBatch(append(events[:2:2], fsmtest.JobsCreated(3, 1, "acme", "use1")...))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := n.batchApplied(partial); ok {
		t.Fatal("a batch applied in part counts as applied")
	}
	other := fsmtest.JobsCreated(0, 1, "acme", "use1")
	other[0].JobID = "use1-1700000000000-g0-99999" // same event id, another event
	conflict, err := fsm.EncodeBatch(other)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := n.batchApplied(conflict); ok {
		t.Fatal("another event under a stored event's id counts as applied")
	}
}

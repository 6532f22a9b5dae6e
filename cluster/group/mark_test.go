package group_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/strata-ledger/strata/antientropy/ledgertree"
	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/group/grouptest"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
)

// A checkpoint mark the leader proposes is met by every replica at the
// same index, where each records the same tree root (anti-entropy's
// replica check, DESIGN §11); a follower may not propose one.
func TestProposeMark_EveryReplicaCheckpointsAtTheSameIndex(t *testing.T) {
	var mu sync.Mutex
	trackers := map[string]*ledgertree.Tracker{}
	c := grouptest.Start(t, 3, 226, group.ProposerConfig{}, grouptest.Hooks{Observer: func(nd *grouptest.Node) fsm.Observer {
		tr, err := ledgertree.New(8)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		trackers[nd.ID] = tr
		return tr
	}})
	leader := c.Leader()
	ctx := testkit.Ctx(t)
	events, jobs := testkit.JobEvents(0, 20)
	if _, err := leader.Prop.Propose(ctx, testkit.MustBatch(t, events...)); err != nil {
		t.Fatal(err)
	}
	index, err := leader.Prop.ProposeMark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var nle *group.NotLeaderError
	if _, err := c.Follower(leader).Prop.ProposeMark(ctx); !errors.As(err, &nle) {
		t.Fatalf("a follower's mark: %v, want a NotLeaderError", err)
	}
	c.WaitConverged(jobs)
	var want ledgertree.Checkpoint
	testkit.WaitUntil(t, "every replica's checkpoint at the mark", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, nd := range c.Nodes {
			cps := trackers[nd.ID].Checkpoints()
			if len(cps) != 1 {
				return false
			}
			if nd == leader {
				want = cps[0]
			}
		}
		return true
	})
	if want.Index != index || want.Records == 0 {
		t.Fatalf("leader's checkpoint %+v, mark at %d", want, index)
	}
	for _, nd := range c.Nodes {
		if got := trackers[nd.ID].Checkpoints()[0]; got != want {
			t.Fatalf("%s: checkpoint %+v, leader's %+v", nd.ID, got, want)
		}
		if nd.Ledger.AppliedIndex() < index {
			t.Fatalf("%s: applied %d, mark at %d", nd.ID, nd.Ledger.AppliedIndex(), index)
		}
	}
}

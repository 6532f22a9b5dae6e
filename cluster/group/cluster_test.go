package group_test

// Tests of the group on real Raft clusters (grouptest), from outside the
// package.

import (
	"io"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/group/grouptest"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/memstore"
)

func TestProposer_ConcurrentSubmittersShareEntriesAndGetTheirOwnResults(t *testing.T) {
	c := grouptest.Start(t, 3, 7, group.ProposerConfig{}, grouptest.Hooks{})
	leader := c.Leader()
	ctx := testkit.Ctx(t)
	shared := testkit.JobEvent(0)
	if _, err := leader.Prop.Propose(ctx, testkit.MustBatch(t, shared)); err != nil {
		t.Fatal(err)
	}
	entriesBefore := testkit.MetricValue(t, leader.Reg, "strata_pipeline_proposer_entries_total")

	// Each submitter's batch: its own new job, then an event every other
	// batch also carries and the ledger already holds.
	const submitters = 64
	got := make([]group.Proposal, submitters)
	errs := make([]error, submitters)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range submitters {
		batch := testkit.MustBatch(t, testkit.JobEvent(1+i), shared)
		wg.Go(func() {
			<-start
			got[i], errs[i] = leader.Prop.Propose(ctx, batch)
		})
	}
	close(start)
	wg.Wait()

	indexes := map[uint64]bool{}
	for i := range submitters {
		if errs[i] != nil {
			t.Fatalf("submitter %d: %v", i, errs[i])
		}
		testkit.WantOutcomes(t, got[i].Results, fsm.OutcomeApplied, fsm.OutcomeDuplicate)
		indexes[got[i].Index] = true
	}
	entries := int(testkit.MetricValue(t, leader.Reg, "strata_pipeline_proposer_entries_total") - entriesBefore)
	t.Logf("%d submissions rode in %d Raft entries", submitters, entries)
	if entries >= submitters || len(indexes) != entries {
		t.Fatalf("%d submissions took %d entries at %d distinct indexes, want fewer entries than submissions", submitters, entries, len(indexes))
	}
	_, jobs := testkit.JobEvents(0, submitters+1)
	c.WaitConverged(jobs)
}

func TestFSMAdapter_SnapshotThroughRaftRestoresOnAFreshLedger(t *testing.T) {
	c := grouptest.Start(t, 1, 6, group.ProposerConfig{}, grouptest.Hooks{})
	nd := c.Nodes[0]
	events, jobs := testkit.JobEvents(0, 50)
	if _, err := nd.Prop.Propose(testkit.Ctx(t), testkit.MustBatch(t, events...)); err != nil {
		t.Fatal(err)
	}
	c.WaitConverged(jobs)
	if err := nd.Group.Raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	metas, err := raft.NewFileSnapshotStore(filepath.Join(nd.Dir, "raft"), 1, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	list, err := metas.List()
	if err != nil || len(list) == 0 {
		t.Fatalf("snapshots %v, %v", list, err)
	}
	_, rc, err := metas.Open(list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := fsm.New(fsm.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	freshFSM, err := group.NewFSM(group.FSMConfig{Ledger: fresh})
	if err != nil {
		t.Fatal(err)
	}
	if err := freshFSM.Restore(rc); err != nil {
		t.Fatal(err)
	}
	want, _, _ := nd.Ledger.Digest()
	if got, _, _ := fresh.Digest(); got != want {
		t.Fatal("ledger restored from the Raft snapshot differs")
	}
}

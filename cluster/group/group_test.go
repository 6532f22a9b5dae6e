package group

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
	"github.com/strata-ledger/strata/transport/raftnet"
)

// openSingleGroup opens a one-voter group in dir on a fresh ledger.
func openSingleGroup(t *testing.T, dir, addr string) (*Group, *fsm.Ledger) {
	t.Helper()
	layer, err := raftnet.Listen(raftnet.Config{ListenAddr: addr})
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := fsm.New(fsm.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	lf, err := NewFSM(FSMConfig{Ledger: ledger})
	if err != nil {
		t.Fatal(err)
	}
	g, err := Open(Config{NodeID: "m1", Kind: Regional, Dir: dir, FSM: lf, Stream: layer})
	if err != nil {
		t.Fatal(err)
	}
	return g, ledger
}

// waitLeader waits on Raft's leadership notifications (no polling sleeps).
func waitLeader(t *testing.T, g *Group) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for g.Raft.State() != raft.Leader {
		select {
		case <-g.Raft.LeaderCh():
		case <-deadline:
			t.Fatal("no leader within 10s")
		}
	}
}

func TestRaftGroup_RestartRejoinsWithItsDataWithoutBootstrap(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "raft")
	g, _ := openSingleGroup(t, dir, "127.0.9.1:0")
	if g.HadState {
		t.Fatal("fresh directory reported existing state")
	}
	addr := g.LocalAddr()
	bootstrapAndApplyJob(t, g)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}

	// Same address, same directory: the node has state, so it must not
	// bootstrap; it elects itself from its stored configuration and
	// replays the log into a fresh ledger.
	g2, ledger2 := openSingleGroup(t, dir, addr)
	t.Cleanup(func() { g2.Close() })
	if !g2.HadState {
		t.Fatal("restarted group did not report its existing state")
	}
	waitLeader(t, g2)
	if err := g2.Raft.Barrier(5 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	s, err := ledger2.Job("acme", testkit.JobID(1))
	if err != nil || s == nil {
		t.Fatalf("job after restart: %v, %v", s, err)
	}
}

// bootstrapAndApplyJob makes g the leader of a group of one and applies
// one job's JobCreated through Raft.
func bootstrapAndApplyJob(t *testing.T, g *Group) {
	t.Helper()
	if err := g.Bootstrap([]Server{{ID: "m1", Addr: g.LocalAddr()}}); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, g)
	j := fsmtest.NewJob(testkit.JobID(1), "acme", 0, "use1")
	if err := g.Raft.Apply(AppendEntry(nil, [][]byte{testkit.MustBatch(t, j.Created())}), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
}

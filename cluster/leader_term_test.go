package cluster

import (
	"testing"
)

// A regional leader's lease view and forwarder belong to its term: when
// leadership moves away they are cleared, so a node that leads again
// never answers lease polls from what it saw in an earlier term (subnet
// 244).
func TestLeaderTerm_ViewAndForwarderClearedWhenLeadershipEnds(t *testing.T) {
	c := startLifecycleCluster(t, 244)
	startWorkers(t, c, 1, 2)
	lifecycleJob(t, c, 1, "10m", "1h")
	old := c.leader(RoleManager)
	n := c.node(old)
	c.waitFor(old+"'s view shows w1's lease", func() bool {
		_, fwd := n.life.ForwarderStatus()
		return len(n.life.CurrentView().Leases["w1"]) == 1 && fwd
	})
	if err := n.raft.Raft.LeadershipTransfer().Error(); err != nil {
		t.Fatal(err)
	}
	c.waitFor("another manager leads", func() bool { return c.leader(RoleManager) != old })
	c.waitFor(old+"'s view and forwarder cleared", func() bool {
		v := n.life.CurrentView()
		_, fwd := n.life.ForwarderStatus()
		return v.Index == 0 && len(v.Leases) == 0 && !fwd
	})
	next := c.node(c.leader(RoleManager))
	c.waitFor("the new leader publishes its view", func() bool { return next.life.CurrentView().Index > 0 })
}

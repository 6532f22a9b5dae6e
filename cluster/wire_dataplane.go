package cluster

import (
	"github.com/strata-ledger/strata/cluster/dataplane"
	"github.com/strata-ledger/strata/cluster/httpapi"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/gossip"
	"github.com/strata-ledger/strata/wal"
)

// The progress data plane on a manager with a data_plane_addr
// (cluster/dataplane); gates hold the live statistics it pushes.

// openDataPlane starts the receiver; runDataPlane starts its loop once
// the API exists (the loop's Events are the API's report rules).
func (n *Node) openDataPlane() error {
	if n.role.gate || n.cfg.DataPlaneAddr == "" {
		return nil
	}
	var err error
	n.dp, err = dataplane.New(dataplane.Config{NodeID: n.cfg.NodeID, Region: n.cfg.Region, Addr: n.cfg.DataPlaneAddr,
		ClusterToken: n.cfg.ClusterToken, CommitInterval: n.cfg.DataPlaneCommitInterval, Store: n.store, Pipeline: n.pipe,
		Events: func(ups []httpapi.DataPlaneUpdate) ([]fsm.Event, []bool, error) { return n.api.DataPlaneEvents(ups) },
		Clock:  func() (hlc.Timestamp, error) { return n.clock.Now() },
		Gates:  n.gateAPIAddrs, HTTPClient: n.peers.HTTPClient(), Logger: n.log, Registerer: n.reg})
	return err
}

// runDataPlane runs the data plane until the node closes.
func (n *Node) runDataPlane() {
	if n.dp != nil {
		n.bg.Go(func() { n.dp.Run(n.ctx) })
	}
}

// onStaged is the pipeline's OnStaged: a recovered staged record. A
// manager that no longer has a data plane cannot fold it: it is released
// (its aggregates are lost, which the log says).
func (n *Node) onStaged(lsn wal.LSN, payload []byte) {
	if n.dp == nil {
		n.log.Warn("a staged progress record was recovered on a node without a data plane: released unread", "lsn", lsn)
		n.pipe.Release([]wal.LSN{lsn})
		return
	}
	n.dp.Recovered(lsn, payload)
}

// gateAPIAddrs are the API addresses of every gate gossip knows.
func (n *Node) gateAPIAddrs() []string {
	var out []string
	for _, m := range n.members.Members() {
		if m.Meta.Role == gossip.RoleGate && m.Meta.APIAddr != "" {
			out = append(out, m.Meta.APIAddr)
		}
	}
	return out
}

// dataPlaneAPI is the data plane as the worker API sees it, nil without
// one.
func (n *Node) dataPlaneAPI() httpapi.DataPlane {
	if n.dp == nil {
		return nil
	}
	return n.dp
}

// liveAPI is the gate's board of live statistics for job views, nil on
// managers (their job reads go to a gate).
func (n *Node) liveAPI() httpapi.Live {
	if n.live == nil {
		return nil
	}
	return n.live
}

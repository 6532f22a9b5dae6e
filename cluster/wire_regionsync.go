package cluster

import (
	"context"

	"github.com/strata-ledger/strata/cluster/aestatus"
	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/httpapi"
	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/cluster/regionsync"
	"github.com/strata-ledger/strata/transport/api"
)

// newRegionSync wires a manager's regional ↔ global anti-entropy: rounds
// on the region's leader against a gate, repairs through cross-group
// delivery. Gates only answer (their Answerer is an internal route).
func (n *Node) newRegionSync() error {
	if n.regionView == nil {
		return nil
	}
	var err error
	n.regionSync, err = regionsync.New(regionsync.Config{
		Region: n.cfg.Region, View: n.regionView, Ledger: n.ledger.View, IsLeader: n.raft.IsLeader,
		Gate: n.compareGate,
		Deliver: func(ctx context.Context, batch []byte) error {
			_, err := n.peers.Deliver(ctx, group.GlobalName, batch)
			return err
		},
		Client: n.peers.HTTPClient(), ClusterToken: n.cfg.ClusterToken, Interval: n.cfg.AntiEntropyInterval,
		Logger: n.log.With("component", "regionsync"), Registerer: n.reg,
	})
	return err
}

// compareGate is the API address of a gate to compare with: one of this
// region's if gossip knows one, else any.
func (n *Node) compareGate() string { return members.GateAPIFor(n.members.Members(), n.cfg.Region) }

// newAEStatus wires the gatherer of GET /v1/cluster/antientropy: every
// node reports itself; a gate gathers its region's managers and one gate
// of every other region.
func (n *Node) newAEStatus() error {
	cfg := aestatus.Config{Self: n.aeSelf, Client: n.peers.HTTPClient(), ClusterToken: n.cfg.ClusterToken}
	if n.role.gate {
		cfg.Managers, cfg.RegionGates = n.regionManagers, n.otherRegionGates
	}
	var err error
	n.ae, err = aestatus.New(cfg)
	return err
}

// aeSelf is this node's anti-entropy report; run has a region's leader
// run a regional ↔ global round first.
func (n *Node) aeSelf(ctx context.Context, run bool) api.AntiEntropyNode {
	v := n.replica.Verdict()
	out := api.AntiEntropyNode{Node: n.cfg.NodeID, Group: n.role.group, Region: n.cfg.Region, Leader: n.raft.IsLeader(),
		Replica: v.State.String(), Reason: v.Reason}
	if n.regionSync == nil {
		return out
	}
	if run && out.Leader {
		_, _ = n.regionSync.Round(ctx) // its error is in the status
	}
	if st := n.regionSync.Status(); st.Rounds > 0 {
		out.Regional = &st
	}
	return out
}

// regionManagers are the managers of this node's region gossip knows.
func (n *Node) regionManagers() []aestatus.Peer {
	return aePeers(members.RegionManagers(n.members.Members(), n.cfg.Region))
}

// otherRegionGates is one gate of every other region gossip knows.
func (n *Node) otherRegionGates() []aestatus.Peer {
	return aePeers(members.OtherRegionGates(n.members.Members(), n.cfg.Region))
}

func aePeers(ps []members.APIPeer) []aestatus.Peer {
	out := make([]aestatus.Peer, len(ps))
	for i, p := range ps {
		out[i] = aestatus.Peer{ID: p.ID, APIAddr: p.APIAddr}
	}
	return out
}

// antiEntropyAPI is the gatherer for the API on gates, nil on managers
// (which forward the calls to a gate).
func (n *Node) antiEntropyAPI() httpapi.AntiEntropy {
	if !n.role.gate {
		return nil
	}
	return n.ae
}

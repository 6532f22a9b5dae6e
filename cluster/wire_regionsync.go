package cluster

import (
	"context"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/regionsync"
	"github.com/strata-ledger/strata/transport/gossip"
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
func (n *Node) compareGate() string {
	var other string
	for _, m := range n.members.Members() {
		if m.Meta.Role != gossip.RoleGate || m.Meta.APIAddr == "" {
			continue
		}
		if m.Meta.Region == n.cfg.Region {
			return m.Meta.APIAddr
		}
		other = m.Meta.APIAddr
	}
	return other
}

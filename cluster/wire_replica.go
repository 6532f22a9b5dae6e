package cluster

import (
	"net/http"
	"time"

	"github.com/strata-ledger/strata/cluster/peer"
	"github.com/strata-ledger/strata/cluster/replica"
)

// buildTree builds the ledger's Merkle tree from the store before Raft
// applies anything (DESIGN §11): the replica check compares it with the
// group's, so a store damaged while the node was down is found.
func (n *Node) buildTree() error {
	start := time.Now()
	if err := n.tree.Rebuild(n.ledger.AppliedIndex(), n.ledger.View); err != nil {
		return err
	}
	n.log.Info("anti-entropy tree built from the ledger", "applied", n.ledger.AppliedIndex(),
		"depth", n.cfg.AntiEntropyDepth, "took", time.Since(start))
	return nil
}

// newReplicaCheck wires the replica check to the group: its leader, its
// other voters (API addresses from gossip) and node-to-node calls.
func (n *Node) newReplicaCheck() error {
	var err error
	n.replica, err = replica.New(replica.Config{
		NodeID: n.cfg.NodeID, Tracker: n.tree, Proposer: n.prop, WaitApplied: n.applied.Wait,
		Leader: func() replica.Peer { return n.apiPeer(n.raft.Leader().ID) },
		Peers:  n.groupPeers, GroupSize: func() int { return len(n.groupServers()) },
		Client: n.peers.HTTPClient(), ClusterToken: n.cfg.ClusterToken, Interval: n.cfg.AntiEntropyInterval,
		Logger: n.log.With("component", "replica-check"), Registerer: n.reg,
	})
	return err
}

// groupServers are the ids of the group's Raft configuration.
func (n *Node) groupServers() []string {
	servers, err := n.raft.Servers()
	if err != nil {
		return nil
	}
	ids := make([]string, 0, len(servers))
	for _, s := range servers {
		ids = append(ids, s.ID)
	}
	return ids
}

// groupPeers are the group's other members that gossip knows an API
// address of.
func (n *Node) groupPeers() []replica.Peer {
	var out []replica.Peer
	for _, id := range n.groupServers() {
		if id == n.cfg.NodeID {
			continue
		}
		if p := n.apiPeer(id); p.APIAddr != "" {
			out = append(out, p)
		}
	}
	return out
}

// apiPeer is node id with its API address ("" if gossip does not know it).
func (n *Node) apiPeer(id string) replica.Peer {
	if id == "" {
		return replica.Peer{}
	}
	if id == n.cfg.NodeID {
		return replica.Peer{ID: id, APIAddr: n.ln.Addr().String()}
	}
	m, ok := n.members.Lookup(id)
	if !ok {
		return replica.Peer{ID: id}
	}
	return replica.Peer{ID: id, APIAddr: m.Meta.APIAddr}
}

// internalRoutes adds the replica check's endpoint to the peers'.
type internalRoutes struct {
	*peer.Peers
	replica *replica.Checker
}

func (r internalRoutes) Routes() map[string]http.HandlerFunc {
	routes := r.Peers.Routes()
	routes[replica.CheckpointsPath] = r.replica.Handler
	return routes
}

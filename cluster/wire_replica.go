package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/strata-ledger/strata/antientropy/ledgertree"
	"github.com/strata-ledger/strata/cluster/aestatus"
	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/livestats"
	"github.com/strata-ledger/strata/cluster/peer"
	"github.com/strata-ledger/strata/cluster/regionsync"
	"github.com/strata-ledger/strata/cluster/replica"
	"github.com/strata-ledger/strata/fsm"
)

// newTrees makes the ledger's trees, before the ledger (they observe
// it): the whole state's (the replica check), and the regional ↔ global
// view (a gate's per region, a manager's of its region).
func (n *Node) newTrees() (fsm.Observer, error) {
	var err error
	if n.tree, err = ledgertree.New(n.cfg.AntiEntropyDepth); err != nil {
		return nil, err
	}
	if n.role.gate {
		n.regionViews = ledgertree.NewRegions(n.cfg.AntiEntropyDepth, nil)
		return ledgertree.Observers{n.tree, n.regionViews}, nil
	}
	if n.regionView, err = ledgertree.NewRegionView(n.cfg.AntiEntropyDepth, n.cfg.Region); err != nil {
		return nil, err
	}
	return ledgertree.Observers{n.tree, n.regionView}, nil
}

// buildTree builds the ledger's Merkle trees from the store before Raft
// applies anything (DESIGN §11): the replica check compares the first
// with the group's, so a store damaged while the node was down is found.
// A gate's region views are built when a region is first compared.
func (n *Node) buildTree() error {
	start := time.Now()
	if err := n.tree.Rebuild(n.ledger.AppliedIndex(), n.ledger.View); err != nil {
		return err
	}
	if n.regionViews != nil {
		n.regionViews.SetView(n.ledger.View)
	}
	if n.regionView != nil {
		if err := n.regionView.Rebuild(n.ledger.AppliedIndex(), n.ledger.View); err != nil {
			return err
		}
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
		Rebuild: n.rebuildFromLeader, StepDown: func() error { return n.raft.TransferLeadership("") },
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

// SnapshotPath is the internal endpoint where a group's leader streams
// its ledger's snapshot to a replica that rebuilds from it.
const SnapshotPath = "/internal/v1/replica/snapshot"

// handleSnapshot streams this leader's ledger snapshot (fsm.Ledger.Snapshot:
// one consistent view, checksummed).
func (n *Node) handleSnapshot(w http.ResponseWriter, r *http.Request) {
	if !auth.PeerTokenOK(r, n.cfg.ClusterToken) {
		http.Error(w, "internal call without the cluster token", http.StatusUnauthorized)
		return
	}
	if !n.raft.IsLeader() {
		http.Error(w, "not the leader", http.StatusMisdirectedRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if err := n.ledger.Snapshot(w); err != nil {
		n.log.Warn("replica snapshot: write failed", "err", err)
	}
}

// rebuildFromLeader replaces this node's ledger with a snapshot of the
// leader's taken at or after this node's applied index, so the entries
// Raft applies next continue it. The ledger's Restore replaces the whole
// store and resets the tree.
func (n *Node) rebuildFromLeader(ctx context.Context) (uint64, error) {
	leader := n.apiPeer(n.raft.Leader().ID)
	if leader.APIAddr == "" || leader.ID == n.cfg.NodeID {
		return 0, errors.New("no other leader to rebuild from")
	}
	ctx, cancel := context.WithTimeout(ctx, rebuildTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+leader.APIAddr+SnapshotPath, http.NoBody)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+n.cfg.ClusterToken)
	client := *n.peers.HTTPClient()
	client.Timeout = rebuildTimeout
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("snapshot from %s: %d %s", leader.ID, resp.StatusCode, bytes.TrimSpace(b))
	}
	hdr := make([]byte, fsm.SnapshotHeaderLen)
	if _, err := io.ReadFull(resp.Body, hdr); err != nil {
		return 0, fmt.Errorf("snapshot from %s: %w", leader.ID, err)
	}
	h, err := fsm.DecodeSnapshotHeader(hdr)
	if err != nil {
		return 0, fmt.Errorf("snapshot from %s: %w", leader.ID, err)
	}
	if applied := n.ledger.AppliedIndex(); h.AppliedIndex < applied {
		return 0, fmt.Errorf("snapshot from %s is at index %d, this ledger applied %d: try again", leader.ID, h.AppliedIndex, applied)
	}
	if err := n.ledger.Restore(io.MultiReader(bytes.NewReader(hdr), resp.Body)); err != nil {
		return 0, fmt.Errorf("restore the snapshot from %s: %w", leader.ID, err)
	}
	n.applied.Set(n.ledger.AppliedIndex())
	return h.AppliedIndex, nil
}

// rebuildTimeout bounds fetching and restoring a leader's snapshot.
const rebuildTimeout = 5 * time.Minute

// internalRoutes adds the replica check's endpoints to the peers'.
type internalRoutes struct {
	*peer.Peers
	n *Node
}

func (r internalRoutes) Routes() map[string]http.HandlerFunc {
	routes := r.Peers.Routes()
	routes[replica.CheckpointsPath] = r.n.replica.Handler
	routes[SnapshotPath] = r.n.handleSnapshot
	routes[aestatus.NodePath] = r.n.ae.NodeHandler
	routes[KeyringPath] = r.n.keyringService().ServeHTTP
	if r.n.regionViews != nil {
		a := &regionsync.Answerer{Regions: r.n.regionViews, View: r.n.ledger.View, ClusterToken: r.n.cfg.ClusterToken,
			Deliver: func(ctx context.Context, region string, batch []byte) error {
				_, err := r.n.peers.Deliver(ctx, region, batch)
				return err
			}}
		routes[regionsync.CompareAnswerPath] = a.Handler
		routes[regionsync.RedeliverPath] = a.RedeliverHandler
		routes[aestatus.RegionPath] = r.n.ae.RegionHandler
	}
	if r.n.live != nil {
		routes[livestats.Path] = livestats.Handler(r.n.live, r.n.cfg.ClusterToken)
	}
	return routes
}

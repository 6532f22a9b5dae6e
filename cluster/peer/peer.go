// Package peer is the node-to-node HTTP calls of a node, both sides
// (/internal/v1/*): a follower's pipeline forwards its batches to the
// leader's proposer (one call, or one coalesced call for what queued while
// earlier calls were in flight), and a group's leader delivers batches to
// another group (global → a region, a region's forwarder → global), relayed
// by at most maxDeliverHops nodes. The wire forms are in FORMAT.md.
//
// Every call carries the cluster token; the receiving side refuses a call
// without it (401) before reading its body, and bounds every body it
// reads. With TLS (Config.TLS) every call is https with this node's
// client certificate, whatever scheme its URL was built with. Calls go through the fault layer, so a partition cuts them as it
// cuts Raft and gossip.
//
// Connections to a peer are kept warm (nodeIdleConns per host) and every
// answer is read to its end so that its connection goes back to the pool
// (TestForward_ConcurrentForwardsReuseConnections).
//
// Peers is safe for concurrent use once Run runs. It does not choose the
// leader (the proposer says who it is), does not retry (the pipeline and
// the lifecycle do) and never proposes anything but what it is handed.
package peer

import (
	"context"
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/transport/faultnet"
	"github.com/strata-ledger/strata/transport/gossip"
	"github.com/strata-ledger/strata/transport/tlsutil"
)

// Members is what Peers reads of gossip: where another node's API is.
type Members interface {
	Lookup(nodeID string) (members.Member, bool)
	Members() []members.Member
}

// Proposer is this node's side of its group: it proposes what a follower
// forwards or another group delivers, when this node leads.
type Proposer interface {
	Propose(ctx context.Context, batch []byte) (group.Proposal, error)
	ProposeMany(ctx context.Context, batches [][]byte) ([]group.Proposal, []error)
	// CheckLeader is nil on the leader, else a *group.NotLeaderError.
	CheckLeader() error
	Leader() group.Leader
}

// Config is what Peers needs. Every field but Registerer is required.
type Config struct {
	NodeID string
	Role   gossip.Role
	Region string
	// Group is this node's Raft group: group.GlobalName or its region.
	Group string
	// ClusterToken authenticates calls both ways.
	ClusterToken string
	// HTTPAddr is this node's API address: calls leave from its IP.
	HTTPAddr   string
	Faults     *faultnet.Faults
	Members    Members
	Proposer   Proposer
	Registerer prometheus.Registerer
	// TLS, if set, makes every node-to-node call https, verified against
	// the cluster CA and presenting this node's certificate (mutual TLS).
	TLS *tlsutil.Reloader
}

// Peers makes and answers node-to-node calls.
type Peers struct {
	cfg   Config
	httpc *http.Client
	coal  *coalescer
}

// New returns Peers; Run must run for Forward to send anything.
func New(cfg Config) (*Peers, error) {
	if cfg.NodeID == "" || cfg.Group == "" || cfg.ClusterToken == "" || cfg.Faults == nil || cfg.Members == nil || cfg.Proposer == nil {
		return nil, errors.New("cluster: peer: NodeID, Group, ClusterToken, Faults, Members and Proposer are required")
	}
	ps := &Peers{cfg: cfg, httpc: newNodeHTTPClient(cfg.Faults, cfg.HTTPAddr, cfg.TLS)}
	var err error
	if ps.coal, err = newCoalescer(ps.forwardMany, cfg.Registerer); err != nil {
		return nil, err
	}
	return ps, nil
}

// Run sends coalesced forwards until ctx ends.
func (ps *Peers) Run(ctx context.Context) { ps.coal.run(ctx) }

// Forward is the pipeline's forwarder (commit.Forwarder): batch to the
// leader's proposer, coalesced with other batches queued for it.
func (ps *Peers) Forward(ctx context.Context, leader group.Leader, batch []byte) (group.Proposal, error) {
	return ps.coal.Forward(ctx, leader, batch)
}

// Deliver proposes batch to the Raft group named grp (group.GlobalName or
// a region) from this node: its own proposer or its leader when grp is this
// node's group, else relayed towards grp.
func (ps *Peers) Deliver(ctx context.Context, grp string, batch []byte) (group.Proposal, error) {
	return ps.deliver(ctx, grp, batch, nil)
}

// HTTPClient is the client of node-to-node calls, for the API's proxying
// of client calls to another node.
func (ps *Peers) HTTPClient() *http.Client { return ps.httpc }

// Routes are the internal endpoints, all POST, by path.
func (ps *Peers) Routes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		ProposePath:     ps.handlePropose,
		ProposeManyPath: ps.handleProposeMany,
		DeliverPath:     ps.handleDeliver,
	}
}

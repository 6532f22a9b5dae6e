package peer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/gossip"
)

// Cross-group delivery: the global leader hands a job's JobCreated and
// decisions to a region's group, and a regional leader's forwarder hands
// the region's job events to the global group. Neither group's members
// all see each other (a gate gossips with its region's managers and with
// the other gates only), so a batch is relayed:
//
//	manager ──► a gate of its region ──► the global group
//	gate    ──► a manager of its region, or a gate of the target region
//
// and the node that belongs to the target group proposes it there (its
// leader directly, a follower through forwardBatch). The batch is applied
// idempotently by event id, so a relay that fails halfway and is retried
// does no harm.

const (
	DeliverPath = "/internal/v1/deliver"
	// maxDeliverHops bounds a relay: manager → gate → gate → manager.
	maxDeliverHops = 3
	// deliverCandidates is how many relay peers one attempt tries.
	deliverCandidates = 2
)

// ErrNoRoute is returned when no alive node leads towards a group.
var ErrNoRoute = errors.New("cluster: no route to group")

// deliver proposes batch to group's Raft group and returns the leader's
// Proposal. hops lists the nodes that relayed it so far.
func (ps *Peers) deliver(ctx context.Context, grp string, batch []byte, hops []string) (group.Proposal, error) {
	if grp == ps.cfg.Group {
		if ps.cfg.Proposer.CheckLeader() == nil {
			return ps.cfg.Proposer.Propose(ctx, batch)
		}
		leader := ps.cfg.Proposer.Leader()
		if leader.ID == "" {
			return group.Proposal{}, &group.NotLeaderError{Err: fmt.Errorf("group %s has no leader", grp)}
		}
		return ps.forwardBatch(ctx, leader, batch)
	}
	if len(hops) >= maxDeliverHops {
		return group.Proposal{}, fmt.Errorf("%w %s: relayed by %v already", ErrNoRoute, grp, hops)
	}
	peers := ps.relayPeers(grp, true)
	if len(peers) == 0 {
		// Gossip may not have seen a healed link come back yet: try the
		// nodes it suspects rather than nothing.
		peers = ps.relayPeers(grp, false)
	}
	peers = slices.DeleteFunc(peers, func(m members.Member) bool { return slices.Contains(hops, m.Meta.NodeID) })
	if len(peers) == 0 {
		return group.Proposal{}, fmt.Errorf("%w %s from node %s", ErrNoRoute, grp, ps.cfg.NodeID)
	}
	var errs []error
	for _, m := range peers[:min(len(peers), deliverCandidates)] {
		p, err := ps.relay(ctx, m, grp, batch, append(slices.Clone(hops), ps.cfg.NodeID))
		if err == nil || errors.Is(err, group.ErrInvalidBatch) || ctx.Err() != nil {
			return p, err
		}
		errs = append(errs, err)
	}
	return group.Proposal{}, errors.Join(errs...)
}

// relayPeers returns the nodes one hop closer to group: alive ones, or
// (alive false) every one gossip knows, whatever its state.
func (ps *Peers) relayPeers(grp string, alive bool) []members.Member {
	role, region, pool := gossip.RoleGate, grp, members.PoolWAN
	switch {
	case ps.cfg.Role == gossip.RoleManager:
		region, pool = ps.cfg.Region, members.PoolLAN
	case grp == ps.cfg.Region:
		role, pool = gossip.RoleManager, members.PoolLAN
	}
	var out []members.Member
	for _, m := range ps.cfg.Members.Members() {
		pm, ok := m.In(pool)
		if ok && (!alive || pm.Status == members.MemberAlive) && m.Meta.Role == role && m.Meta.Region == region && m.Meta.NodeID != ps.cfg.NodeID {
			out = append(out, m)
		}
	}
	return out
}

// relay sends batch to m's internal deliver endpoint.
func (ps *Peers) relay(ctx context.Context, m members.Member, grp string, batch []byte, hops []string) (group.Proposal, error) {
	u := "http://" + m.Meta.APIAddr + DeliverPath + "?group=" + url.QueryEscape(grp)
	out, status, err := ps.postBatch(ctx, u, batch, hops)
	switch {
	case err != nil:
		return group.Proposal{}, fmt.Errorf("relay to %s via %s: %w", grp, m.Meta.NodeID, err)
	case status == http.StatusOK:
		return group.Proposal{Index: out.Index, Results: decodeResults(out.Results)}, nil
	case status == http.StatusBadRequest && out.Error != nil:
		return group.Proposal{}, fmt.Errorf("%w: %s", group.ErrInvalidBatch, out.Error.Message)
	}
	return group.Proposal{}, fmt.Errorf("relay to %s via %s: %d: %s", grp, m.Meta.NodeID, status, out.message(status))
}

// handleDeliver is a relay's or the target group's side of deliver.
func (ps *Peers) handleDeliver(w http.ResponseWriter, r *http.Request) {
	if !ps.internalCaller(w, r) {
		return
	}
	grp := r.URL.Query().Get("group")
	if grp != group.GlobalName && !fsm.IsRegion(grp) {
		httpx.WriteJSON(w, http.StatusBadRequest, ProposeResponse{Error: &api.Error{Code: httpx.CodeBadRequest, Message: fmt.Sprintf("bad group %q", grp)}})
		return
	}
	hops := r.Header.Values(api.HeaderForwardedBy)
	if slices.Contains(hops, ps.cfg.NodeID) {
		httpx.WriteJSON(w, http.StatusLoopDetected, ProposeResponse{Error: &api.Error{Code: httpx.CodeUnavailable, Message: "relay loop through " + ps.cfg.NodeID}})
		return
	}
	batch, ok := internalBody(w, r, maxInternalBody)
	if !ok {
		return
	}
	p, err := ps.deliver(r.Context(), grp, batch, hops)
	switch {
	case err == nil:
		httpx.WriteJSON(w, http.StatusOK, ProposeResponse{Index: p.Index, Results: encodeResults(p.Results)})
	case errors.Is(err, group.ErrInvalidBatch):
		httpx.WriteJSON(w, http.StatusBadRequest, ProposeResponse{Error: &api.Error{Code: httpx.CodeBadRequest, Message: err.Error()}})
	default:
		httpx.WriteJSON(w, http.StatusServiceUnavailable, ProposeResponse{Error: &api.Error{Code: httpx.CodeUnavailable, Message: err.Error()}})
	}
}

package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/transport/api"
)

// Cluster, operator and health endpoints.

// Health and operator limits.
const (
	// readyLagEntries is how far the applied index may trail the commit
	// index for the node to call itself caught up.
	readyLagEntries = 1000
	// membershipChangeTimeout bounds a join, remove or transfer.
	membershipChangeTimeout = 10 * time.Second
)

func (n *Node) handleLivez(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, api.Health{Status: "ok"})
}

// handleReadyz: ready when the group has a leader and this node has
// applied what it knows to be committed.
func (n *Node) handleReadyz(w http.ResponseWriter, _ *http.Request) {
	if reason := n.notReady(); reason != "" {
		writeJSON(w, http.StatusServiceUnavailable, api.Health{Status: "unavailable", Reason: reason})
		return
	}
	writeJSON(w, http.StatusOK, api.Health{Status: "ok"})
}

func (n *Node) notReady() string {
	st := n.raft.Status()
	switch {
	case n.closing.Load():
		return "shutting down"
	case st.Leader.ID == "":
		return fmt.Sprintf("raft group %s has no leader", n.group)
	case st.AppliedIndex+readyLagEntries < st.CommitIndex:
		return fmt.Sprintf("catching up: applied %d of %d", st.AppliedIndex, st.CommitIndex)
	}
	return ""
}

func (n *Node) handleMembers(w http.ResponseWriter, r *http.Request) {
	if _, ok := n.principal(w, r); !ok {
		return
	}
	out := api.MemberList{Node: n.cfg.NodeID, Members: []api.Member{}}
	for _, m := range n.members.Members() {
		am := api.Member{NodeID: m.Meta.NodeID, Role: m.Meta.Role.String(), Region: m.Meta.Region, APIAddr: m.Meta.APIAddr,
			RaftAddr: m.Meta.RaftAddr, DataAddr: m.Meta.DataAddr, Version: m.Meta.Version, Status: m.Status.String(),
			Pools: map[string]string{}}
		for _, pm := range m.Pools {
			am.Pools[pm.Pool.String()] = pm.Status.String()
		}
		out.Members = append(out.Members, am)
	}
	writeJSON(w, http.StatusOK, out)
}

func (n *Node) handleRaft(w http.ResponseWriter, r *http.Request) {
	if _, ok := n.principal(w, r); !ok {
		return
	}
	g, err := n.raftStatus()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.RaftStatus{Node: n.cfg.NodeID, Groups: []api.RaftGroup{g}})
}

func (n *Node) raftStatus() (api.RaftGroup, error) {
	st := n.raft.Status()
	g := api.RaftGroup{Name: n.group, Tier: n.tier.String(), State: st.State, Leader: st.Leader.ID,
		LeaderAddr: st.Leader.Addr, Term: st.Term, CommitIndex: st.CommitIndex,
		AppliedIndex: n.ledger.AppliedIndex(), LastIndex: st.LastIndex, LastContactMs: st.LastContact.Milliseconds(),
		Peers: []api.RaftPeer{}}
	if g.LastContactMs > int64(24*time.Hour/time.Millisecond) {
		g.LastContactMs = -1 // never
	}
	servers, err := n.raft.Servers()
	if err != nil {
		return g, err
	}
	for _, s := range servers {
		g.Peers = append(g.Peers, api.RaftPeer{ID: s.ID, Address: s.Addr, Suffrage: s.Suffrage, Leader: s.ID == st.Leader.ID})
	}
	marks := n.wal.Watermarks()
	g.Watermarks = map[string]uint64{
		"last": uint64(n.wal.LastLSN()), "regional": uint64(marks.Regional), "global": uint64(marks.Global),
		"applied": uint64(marks.Applied), "compacted": uint64(marks.Compacted), "tier": uint64(n.pipe.Watermark()),
	}
	if st, ok := n.life.ForwarderStatus(); ok && n.raft.IsLeader() {
		g.Forwarder = &st
	}
	return g, nil
}

// leaderOnly forwards an operator call that only the leader can do.
func (n *Node) leaderOnly(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if n.raft.IsLeader() {
		return false
	}
	n.forwardToLeader(w, r, body, "membership changes are made by the leader")
	return true
}

// handleJoin, handleRemovePeer and handleTransfer are operator-only (routes).
func (n *Node) handleJoin(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var req api.JoinRequest
	if err := decodeStrictBytes(body, &req); err != nil {
		writeError(w, err)
		return
	}
	if !nodeIDPattern.MatchString(req.NodeID) {
		writeError(w, badRequest("node_id %q must be 1-63 of [a-z0-9_-]", req.NodeID))
		return
	}
	if _, _, err := net.SplitHostPort(req.RaftAddr); err != nil {
		writeError(w, badRequest("raft_addr %q is not host:port", req.RaftAddr))
		return
	}
	if n.leaderOnly(w, r, body) {
		return
	}
	n.answerChange(w)(n.raft.AddServer(req.NodeID, req.RaftAddr, !req.NonVoter, membershipChangeTimeout))
}

func (n *Node) handleRemovePeer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	found, err := n.raft.HasServer(id)
	if err != nil {
		writeError(w, err)
		return
	}
	if !found {
		writeError(w, &APIError{Status: http.StatusNotFound, Code: CodeNotFound,
			Message: fmt.Sprintf("%s is not a server of raft group %s", id, n.group)})
		return
	}
	if n.leaderOnly(w, r, nil) {
		return
	}
	n.answerChange(w)(n.raft.RemoveServer(id, membershipChangeTimeout))
}

func (n *Node) handleTransfer(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var req api.TransferRequest
	if len(body) > 0 {
		if err := decodeStrictBytes(body, &req); err != nil {
			writeError(w, err)
			return
		}
	}
	if n.leaderOnly(w, r, body) {
		return
	}
	err = n.raft.TransferLeadership(req.To)
	if errors.Is(err, group.ErrUnknownServer) {
		writeError(w, &APIError{Status: http.StatusNotFound, Code: CodeNotFound,
			Message: fmt.Sprintf("%s is not a server of raft group %s", req.To, n.group)})
		return
	}
	if err != nil {
		writeError(w, &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "leadership transfer: " + err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), membershipChangeTimeout)
	defer cancel()
	leader := n.raft.Leader().ID
	for (leader == "" || leader == n.cfg.NodeID) && ctx.Err() == nil {
		sleepCtx(ctx, 10*time.Millisecond)
		leader = n.raft.Leader().ID
	}
	writeJSON(w, http.StatusOK, api.OperatorResponse{Group: n.group, Leader: leader})
}

// answerChange answers a membership change with the group's leader and
// the change's index, or 503 with why it failed.
func (n *Node) answerChange(w http.ResponseWriter) func(index uint64, err error) {
	return func(index uint64, err error) {
		if err != nil {
			writeError(w, &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "membership change: " + err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, api.OperatorResponse{Group: n.group, Leader: n.raft.Leader().ID, Index: index})
	}
}

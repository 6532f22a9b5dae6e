package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/members"
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
	// leaderPollInterval spaces the looks for a new leader after a
	// leadership transfer.
	leaderPollInterval = 10 * time.Millisecond
)

func (sv *Server) handleLivez(w http.ResponseWriter, _ *http.Request, _ *call) {
	httpx.WriteJSON(w, http.StatusOK, api.Health{Status: "ok"})
}

// handleReadyz: ready when the group has a leader and this node has
// applied what it knows to be committed.
func (sv *Server) handleReadyz(w http.ResponseWriter, _ *http.Request, _ *call) {
	if reason := sv.notReady(); reason != "" {
		httpx.WriteJSON(w, http.StatusServiceUnavailable, api.Health{Status: "unavailable", Reason: reason})
		return
	}
	httpx.WriteJSON(w, http.StatusOK, api.Health{Status: "ok"})
}

func (sv *Server) notReady() string {
	st := sv.cfg.Consensus.Status()
	switch {
	case sv.cfg.Closing():
		return "shutting down"
	case st.Leader.ID == "":
		return fmt.Sprintf("raft group %s has no leader", sv.cfg.Group)
	case st.AppliedIndex+readyLagEntries < st.CommitIndex:
		return fmt.Sprintf("catching up: applied %d of %d", st.AppliedIndex, st.CommitIndex)
	}
	return sv.ledgerUnfit()
}

// ledgerUnfit is why this node's ledger must not be served, "" if it may.
func (sv *Server) ledgerUnfit() string {
	if sv.cfg.LedgerCheck == nil {
		return ""
	}
	return sv.cfg.LedgerCheck()
}

func (sv *Server) handleMembers(w http.ResponseWriter, r *http.Request, c *call) {
	out := api.MemberList{Node: sv.cfg.NodeID, Members: []api.Member{}}
	for _, m := range sv.cfg.Members.Members() {
		am := api.Member{NodeID: m.Meta.NodeID, Role: m.Meta.Role.String(), Region: m.Meta.Region, APIAddr: m.Meta.APIAddr,
			RaftAddr: m.Meta.RaftAddr, DataAddr: m.Meta.DataAddr, Version: m.Meta.Version, Status: m.Status.String(),
			Pools: map[string]string{}}
		for _, pm := range m.Pools {
			am.Pools[pm.Pool.String()] = pm.Status.String()
		}
		out.Members = append(out.Members, am)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

func (sv *Server) handleRaft(w http.ResponseWriter, r *http.Request, c *call) {
	g, err := sv.raftStatus()
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, api.RaftStatus{Node: sv.cfg.NodeID, Groups: []api.RaftGroup{g}})
}

func (sv *Server) raftStatus() (api.RaftGroup, error) {
	st := sv.cfg.Consensus.Status()
	g := api.RaftGroup{Name: sv.cfg.Group, Tier: sv.cfg.Tier.String(), State: st.State, Leader: st.Leader.ID,
		LeaderAddr: st.Leader.Addr, Term: st.Term, CommitIndex: st.CommitIndex,
		AppliedIndex: sv.cfg.Ledger.AppliedIndex(), LastIndex: st.LastIndex, LastContactMs: st.LastContact.Milliseconds(),
		Peers: []api.RaftPeer{}}
	if g.LastContactMs > int64(24*time.Hour/time.Millisecond) {
		g.LastContactMs = -1 // never
	}
	servers, err := sv.cfg.Consensus.Servers()
	if err != nil {
		return g, err
	}
	for _, s := range servers {
		g.Peers = append(g.Peers, api.RaftPeer{ID: s.ID, Address: s.Addr, Suffrage: s.Suffrage, Leader: s.ID == st.Leader.ID})
	}
	marks := sv.cfg.WAL.Watermarks()
	g.Watermarks = map[string]uint64{
		"last": uint64(sv.cfg.WAL.LastLSN()), "regional": uint64(marks.Regional), "global": uint64(marks.Global),
		"applied": uint64(marks.Applied), "compacted": uint64(marks.Compacted), "tier": uint64(sv.cfg.Writer.Watermark()),
	}
	if sv.cfg.DataPlane != nil {
		dp := sv.cfg.DataPlane.Status()
		g.DataPlane = &dp
	}
	if st, ok := sv.cfg.Workers.ForwarderStatus(); ok && sv.cfg.Consensus.IsLeader() {
		g.Forwarder = &st
	}
	return g, nil
}

// leaderOnly forwards an operator call that only the leader can do.
func (sv *Server) leaderOnly(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if sv.cfg.Consensus.IsLeader() {
		return false
	}
	sv.forwardToLeader(w, r, body, "membership changes are made by the leader")
	return true
}

// handleJoin, handleRemovePeer and handleTransfer are operator-only (routes).
func (sv *Server) handleJoin(w http.ResponseWriter, r *http.Request, c *call) {
	body, err := readBody(r)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	var req api.JoinRequest
	if err := httpx.DecodeBytes(body, &req); err != nil {
		httpx.WriteError(w, err)
		return
	}
	if !members.IsNodeID(req.NodeID) {
		httpx.WriteError(w, httpx.BadRequest("node_id %q must be 1-63 of [a-z0-9_-]", req.NodeID))
		return
	}
	if _, _, err := net.SplitHostPort(req.RaftAddr); err != nil {
		httpx.WriteError(w, httpx.BadRequest("raft_addr %q is not host:port", req.RaftAddr))
		return
	}
	if sv.leaderOnly(w, r, body) {
		return
	}
	sv.answerChange(w)(sv.cfg.Consensus.AddServer(req.NodeID, req.RaftAddr, !req.NonVoter, membershipChangeTimeout))
}

func (sv *Server) handleRemovePeer(w http.ResponseWriter, r *http.Request, c *call) {
	id := r.PathValue("id")
	found, err := sv.cfg.Consensus.HasServer(id)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	if !found {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusNotFound, Code: httpx.CodeNotFound,
			Message: fmt.Sprintf("%s is not a server of raft group %s", id, sv.cfg.Group)})
		return
	}
	if sv.leaderOnly(w, r, nil) {
		return
	}
	sv.answerChange(w)(sv.cfg.Consensus.RemoveServer(id, membershipChangeTimeout))
}

func (sv *Server) handleTransfer(w http.ResponseWriter, r *http.Request, c *call) {
	body, err := readBody(r)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	var req api.TransferRequest
	if len(body) > 0 {
		if err := httpx.DecodeBytes(body, &req); err != nil {
			httpx.WriteError(w, err)
			return
		}
	}
	if sv.leaderOnly(w, r, body) {
		return
	}
	err = sv.cfg.Consensus.TransferLeadership(req.To)
	if errors.Is(err, group.ErrUnknownServer) {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusNotFound, Code: httpx.CodeNotFound,
			Message: fmt.Sprintf("%s is not a server of raft group %s", req.To, sv.cfg.Group)})
		return
	}
	if err != nil {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable, Message: "leadership transfer: " + err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), membershipChangeTimeout)
	defer cancel()
	leader := sv.cfg.Consensus.Leader().ID
	for (leader == "" || leader == sv.cfg.NodeID) && ctx.Err() == nil {
		select { // the new leader's first heartbeat is a round trip away
		case <-ctx.Done():
		case <-time.After(leaderPollInterval):
		}
		leader = sv.cfg.Consensus.Leader().ID
	}
	httpx.WriteJSON(w, http.StatusOK, api.OperatorResponse{Group: sv.cfg.Group, Leader: leader})
}

// answerChange answers a membership change with the group's leader and
// the change's index, or 503 with why it failed.
func (sv *Server) answerChange(w http.ResponseWriter) func(index uint64, err error) {
	return func(index uint64, err error) {
		if err != nil {
			httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable, Message: "membership change: " + err.Error()})
			return
		}
		httpx.WriteJSON(w, http.StatusOK, api.OperatorResponse{Group: sv.cfg.Group, Leader: sv.cfg.Consensus.Leader().ID, Index: index})
	}
}

// handleAntiEntropy answers GET /v1/cluster/antientropy and POST
// /v1/cluster/antientropy/run (which has every region's leader run a
// round first and answers when they are done) for the whole cluster.
func (sv *Server) handleAntiEntropy(w http.ResponseWriter, r *http.Request, _ *call) {
	if sv.cfg.AntiEntropy == nil {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable,
			Message: "anti-entropy status is gathered by gates"})
		return
	}
	st, err := sv.cfg.AntiEntropy.Status(r.Context(), r.Method == http.MethodPost)
	if err != nil {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable, Message: err.Error()})
		return
	}
	httpx.WriteJSON(w, http.StatusOK, st)
}

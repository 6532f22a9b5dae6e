package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/faultnet"
)

// Node-to-node calls: a follower's pipeline hands its batches to the
// leader's /internal/v1/propose, which proposes them with the leader's own
// Proposer and answers with the Raft index and per-event results.

// Internal API paths and limits.
const (
	internalProposePath = "/internal/v1/propose"
	// internalProposeManyPath takes a follower's coalesced batches: the
	// body is an entry envelope (entry.go), the answer one proposeResponse
	// per batch (see coalescer).
	internalProposeManyPath = "/internal/v1/propose-many"
	// maxInternalBody bounds a forwarded batch: one NodeWAL record.
	maxInternalBody = 1 << 20
	// maxInternalResponse bounds the answer read back (results of up to
	// MaxEventsPerBatch events).
	maxInternalResponse = 8 << 20
	// nodeHTTPTimeout bounds one node-to-node HTTP call.
	nodeHTTPTimeout = 15 * time.Second
	// nodeIdleConns keeps connections to peers warm: a forwarding follower
	// sends many concurrent batches to one leader.
	nodeIdleConns = 256
)

// newNodeHTTPClient returns the client of node-to-node calls. Its
// connections go through the fault layer (so partitions and WAN latency
// apply to forwarded proposals and deliveries as they do to Raft) and
// leave from the node's own address (so the other side's rules attribute
// them to this node).
func newNodeHTTPClient(faults *faultnet.Faults, httpAddr string) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = nodeIdleConns, nodeIdleConns
	d := &net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}
	if host, _, err := net.SplitHostPort(httpAddr); err == nil {
		if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
			d.LocalAddr = &net.TCPAddr{IP: ip}
		}
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return faults.Dial(ctx, addr, func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, network, addr) })
	}
	return &http.Client{Transport: t, Timeout: nodeHTTPTimeout}
}

// proposeResponse is the leader's answer to a forwarded batch. Status is
// set inside a proposeManyResponse, where it is each batch's own.
type proposeResponse struct {
	Status  int          `json:"status,omitempty"`
	Index   uint64       `json:"index"`
	Results []resultWire `json:"results"`
	Leader  string       `json:"leader,omitempty"` // on 421: the leader this node knows
	Error   *api.Error   `json:"error,omitempty"`
}

// resultWire is an fsm.Result on the wire; Code names the fsm sentinel
// error so the receiving side rebuilds an error errors.Is recognises.
type resultWire struct {
	Outcome uint8  `json:"outcome"`
	Seq     uint64 `json:"seq,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// resultCodes maps fsm's sentinel errors to stable wire codes.
var resultCodes = []struct {
	code string
	err  error
}{
	{"event_conflict", fsm.ErrEventConflict}, {"unknown_job", fsm.ErrUnknownJob}, {"job_exists", fsm.ErrJobExists},
	{"unknown_region", fsm.ErrUnknownRegion}, {"tenant_mismatch", fsm.ErrTenantMismatch},
	{"precedes_creation", fsm.ErrPrecedesCreation}, {"terminal", fsm.ErrTerminal},
	{"illegal_transition", fsm.ErrIllegalTransition}, {"stale_fence", fsm.ErrStaleFence},
	{"unknown_workflow", fsm.ErrUnknownWorkflow}, {"workflow_exists", fsm.ErrWorkflowExists},
	{"unknown_worker", fsm.ErrUnknownWorker}, {"worker_exists", fsm.ErrWorkerExists},
	{"worker_mismatch", fsm.ErrWorkerMismatch}, {"limit", fsm.ErrLimit}, {"invalid_event", fsm.ErrInvalidEvent},
	{"malformed", fsm.ErrMalformed},
}

// wireResultError is a result's error rebuilt from the wire.
type wireResultError struct {
	code, msg string
	sentinel  error
}

func (e *wireResultError) Error() string { return e.msg }
func (e *wireResultError) Unwrap() error { return e.sentinel }

func encodeResults(rs []fsm.Result) []resultWire {
	out := make([]resultWire, len(rs))
	for i, r := range rs {
		out[i] = resultWire{Outcome: uint8(r.Outcome), Seq: r.Seq}
		if r.Err != nil {
			out[i].Message, out[i].Code = r.Err.Error(), "error"
			for _, c := range resultCodes {
				if errors.Is(r.Err, c.err) {
					out[i].Code = c.code
					break
				}
			}
		}
	}
	return out
}

func decodeResults(ws []resultWire) []fsm.Result {
	out := make([]fsm.Result, len(ws))
	for i, w := range ws {
		out[i] = fsm.Result{Outcome: fsm.Outcome(w.Outcome), Seq: w.Seq}
		if w.Code != "" {
			re := &wireResultError{code: w.Code, msg: w.Message}
			for _, c := range resultCodes {
				if c.code == w.Code {
					re.sentinel = c.err
				}
			}
			out[i].Err = re
		}
	}
	return out
}

// forwardBatch is the pipeline's Forwarder: it sends batch to the leader's
// internal API. Every failure but an invalid batch is retried by the
// pipeline.
func (n *Node) forwardBatch(ctx context.Context, leader group.Leader, batch []byte) (group.Proposal, error) {
	u, err := n.leaderURL(leader, internalProposePath)
	if err != nil {
		return group.Proposal{}, err
	}
	out, status, err := n.postBatch(ctx, u, batch, []string{n.cfg.NodeID})
	if err != nil {
		return group.Proposal{}, fmt.Errorf("forward to leader %s: %w", leader.ID, err)
	}
	return out.proposal(leader, status)
}

// leaderURL is path on the leader's internal API, at the address gossip
// knows for it; a *NotLeaderError (retried) when gossip does not.
func (n *Node) leaderURL(leader group.Leader, path string) (string, error) {
	m, ok := n.members.Lookup(leader.ID)
	if !ok || m.Meta.APIAddr == "" {
		return "", &group.NotLeaderError{Leader: leader, Err: fmt.Errorf("leader %s not known to gossip", leader.ID)}
	}
	return "http://" + m.Meta.APIAddr + path, nil
}

// proposal turns the leader's answer with its status into the proposal
// or the error the pipeline acts on (see Forwarder).
func (r *proposeResponse) proposal(leader group.Leader, status int) (group.Proposal, error) {
	switch {
	case status == http.StatusOK:
		return group.Proposal{Index: r.Index, Results: decodeResults(r.Results)}, nil
	case status == http.StatusMisdirectedRequest:
		return group.Proposal{}, &group.NotLeaderError{Leader: group.Leader{ID: r.Leader}, Err: fmt.Errorf("forwarded to %s, which is not the leader", leader.ID)}
	case status == http.StatusBadRequest && r.Error != nil:
		return group.Proposal{}, fmt.Errorf("%w: leader %s: %s", group.ErrInvalidBatch, leader.ID, r.Error.Message)
	default:
		return group.Proposal{}, fmt.Errorf("forward to leader %s: %d: %s", leader.ID, status, r.message(status))
	}
}

// proposeManyResponse is the leader's answer to a coalesced forward.
type proposeManyResponse struct {
	Batches []proposeResponse `json:"batches"`
}

// forwardMany is the coalescer's call: batches to the leader's
// propose-many endpoint in one request.
func (n *Node) forwardMany(ctx context.Context, leader group.Leader, batches [][]byte) ([]forwardOutcome, error) {
	if len(batches) == 1 { // the single-batch endpoint skips the envelope
		out, err := n.forwardBatch(ctx, leader, batches[0])
		return []forwardOutcome{{out, err}}, nil
	}
	u, err := n.leaderURL(leader, internalProposeManyPath)
	if err != nil {
		return nil, err
	}
	body := group.AppendEntry(make([]byte, 0, group.EncodedEntryLen(batches)), batches)
	var out proposeManyResponse
	status, err := n.postInternal(ctx, u, body, []string{n.cfg.NodeID}, &out)
	if err != nil {
		return nil, fmt.Errorf("forward to leader %s: %w", leader.ID, err)
	}
	if status != http.StatusOK {
		var whole proposeResponse
		if len(out.Batches) > 0 {
			whole = out.Batches[0]
		}
		_, err := whole.proposal(leader, status)
		return nil, err
	}
	if len(out.Batches) != len(batches) {
		return nil, fmt.Errorf("forward to leader %s: %d answers for %d batches", leader.ID, len(out.Batches), len(batches))
	}
	outs := make([]forwardOutcome, len(batches))
	for i := range out.Batches {
		outs[i].out, outs[i].err = out.Batches[i].proposal(leader, out.Batches[i].Status)
	}
	return outs, nil
}

// postBatch sends an encoded batch to another node's internal endpoint
// u, with the cluster token and the relaying nodes in hops, and decodes
// its answer.
func (n *Node) postBatch(ctx context.Context, u string, batch []byte, hops []string) (proposeResponse, int, error) {
	var out proposeResponse
	status, err := n.postInternal(ctx, u, batch, hops, &out)
	return out, status, err
}

// postInternal posts body to another node's internal endpoint u and
// decodes the JSON answer into out.
func (n *Node) postInternal(ctx context.Context, u string, body []byte, hops []string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+n.cfg.ClusterToken)
	req.Header.Set("Content-Type", "application/octet-stream")
	for _, h := range hops {
		req.Header.Add(api.HeaderForwardedBy, h)
	}
	resp, err := n.httpc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxInternalResponse)).Decode(out); err != nil {
		return resp.StatusCode, fmt.Errorf("status %d: %w", resp.StatusCode, err)
	}
	return resp.StatusCode, nil
}

// message is the error an answer carries, or its status text.
func (r *proposeResponse) message(status int) string {
	if r.Error != nil {
		return r.Error.Message
	}
	return http.StatusText(status)
}

// internalCaller answers 401 unless r carries the cluster token.
func (n *Node) internalCaller(w http.ResponseWriter, r *http.Request) bool {
	if !auth.PeerTokenOK(r, n.cfg.ClusterToken) {
		writeError(w, &APIError{Status: http.StatusUnauthorized, Code: CodeUnauthenticated, Message: "internal call without the cluster token"})
		return false
	}
	return true
}

// internalBody reads the body of an internal call, answering 413 itself
// when it is over limit.
func internalBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		writeError(w, tooLarge(limit))
		return nil, false
	}
	return body, true
}

// handlePropose is the leader's side of forwardBatch.
func (n *Node) handlePropose(w http.ResponseWriter, r *http.Request) {
	if !n.internalCaller(w, r) {
		return
	}
	batch, ok := internalBody(w, r, maxInternalBody)
	if !ok {
		return
	}
	p, err := n.prop.Propose(r.Context(), batch)
	status, resp := proposeAnswer(p, err)
	writeJSON(w, status, resp)
}

// proposeAnswer is the status and answer for one batch's outcome on the
// leader.
func proposeAnswer(p group.Proposal, err error) (int, proposeResponse) {
	var nle *group.NotLeaderError
	switch {
	case err == nil:
		return http.StatusOK, proposeResponse{Index: p.Index, Results: encodeResults(p.Results)}
	case errors.As(err, &nle):
		return http.StatusMisdirectedRequest, proposeResponse{Leader: nle.Leader.ID,
			Error: &api.Error{Code: CodeUnavailable, Message: err.Error()}}
	case errors.Is(err, group.ErrInvalidBatch):
		return http.StatusBadRequest, proposeResponse{Error: &api.Error{Code: CodeBadRequest, Message: err.Error()}}
	default:
		return http.StatusServiceUnavailable, proposeResponse{Error: &api.Error{Code: CodeUnavailable, Message: err.Error()}}
	}
}

// handleProposeMany is the leader's side of forwardMany: 200 with one
// answer (and status) per batch, or one whole-call answer as the only
// element with the call's status (not the leader, malformed envelope).
func (n *Node) handleProposeMany(w http.ResponseWriter, r *http.Request) {
	if !n.internalCaller(w, r) {
		return
	}
	body, ok := internalBody(w, r, group.MaxEntryBytes)
	if !ok {
		return
	}
	batches, err := group.DecodeEntry(body)
	if err != nil {
		status, resp := proposeAnswer(group.Proposal{}, fmt.Errorf("%w: %w", group.ErrInvalidBatch, err))
		writeJSON(w, status, proposeManyResponse{Batches: []proposeResponse{resp}})
		return
	}
	if err := n.prop.CheckLeader(); err != nil {
		status, resp := proposeAnswer(group.Proposal{}, err)
		writeJSON(w, status, proposeManyResponse{Batches: []proposeResponse{resp}})
		return
	}
	props, errs := n.prop.ProposeMany(r.Context(), batches)
	out := proposeManyResponse{Batches: make([]proposeResponse, len(batches))}
	for i := range batches {
		status, resp := proposeAnswer(props[i], errs[i])
		resp.Status = status
		out.Batches[i] = resp
	}
	writeJSON(w, http.StatusOK, out)
}

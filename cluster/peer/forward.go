package peer

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
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/tracing"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/faultnet"
	"github.com/strata-ledger/strata/transport/tlsutil"
)

// Node-to-node calls: a follower's pipeline hands its batches to the
// leader's /internal/v1/propose, which proposes them with the leader's own
// Proposer and answers with the Raft index and per-event results.

// Internal API paths and limits.
const (
	ProposePath = "/internal/v1/propose"
	// ProposeManyPath takes a follower's coalesced batches: the
	// body is an entry envelope (entry.go), the answer one ProposeResponse
	// per batch (see coalescer).
	ProposeManyPath = "/internal/v1/propose-many"
	// maxInternalBody bounds a forwarded batch: one NodeWAL record.
	maxInternalBody = 1 << 20
	// maxInternalResponse bounds the answer read back (results of up to
	// MaxEventsPerBatch events).
	maxInternalResponse = 8 << 20
	// maxDrainBytes bounds what is read of an answer after its JSON
	// value (its newline, the end of a chunked body) so that the
	// connection goes back to the pool: an answer closed before its end
	// closes its connection, and the next call dials again.
	maxDrainBytes = 4 << 10
	// CallTimeout bounds one node-to-node HTTP call.
	CallTimeout = 15 * time.Second
	// nodeIdleConns keeps connections to peers warm: a forwarding follower
	// sends many concurrent batches to one leader.
	nodeIdleConns = 256
)

// newNodeHTTPClient returns the client of node-to-node calls. Its
// connections go through the fault layer (so partitions and WAN latency
// apply to forwarded proposals and deliveries as they do to Raft) and
// leave from the node's own address (so the other side's rules attribute
// them to this node).
//
// With tlsr set, every request is sent as https (httpsOnly) over a TLS
// connection made with the node's current certificate and CA: node-to-node
// URLs are built as http://host:port across the node's packages, and this
// is the one place that decides the scheme, so none of them can leave in
// clear.
func newNodeHTTPClient(faults *faultnet.Faults, httpAddr string, tlsr *tlsutil.Reloader) *http.Client {
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
	if tlsr == nil {
		return &http.Client{Transport: tracing.Transport{Next: t}, Timeout: CallTimeout}
	}
	t.DialTLSContext = tlsr.DialTLS(t.DialContext)
	return &http.Client{Transport: tracing.Transport{Next: httpsOnly{t}}, Timeout: CallTimeout}
}

// httpsOnly sends every request as https.
type httpsOnly struct{ next http.RoundTripper }

func (h httpsOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "https" {
		r = r.Clone(r.Context())
		r.URL.Scheme = "https"
	}
	return h.next.RoundTrip(r)
}

// ProposeResponse is the leader's answer to a forwarded batch. Status is
// set inside a ProposeManyResponse, where it is each batch's own.
type ProposeResponse struct {
	Status  int          `json:"status,omitempty"`
	Index   uint64       `json:"index"`
	Results []ResultWire `json:"results"`
	Leader  string       `json:"leader,omitempty"` // on 421: the leader this node knows
	Error   *api.Error   `json:"error,omitempty"`
}

// ResultWire is an fsm.Result on the wire; Code names the fsm sentinel
// error so the receiving side rebuilds an error errors.Is recognises.
type ResultWire struct {
	Outcome uint8  `json:"outcome"`
	Seq     uint64 `json:"seq,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// ResultCode is the stable wire code of a ledger error (resultCodes), or
// "error" for one without.
func ResultCode(err error) string {
	for _, c := range resultCodes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return "error"
}

// resultCodes maps fsm's sentinel errors to stable wire codes, first
// match wins: tenant_mismatch follows unknown_job and unknown_workflow,
// so an event naming another tenant's job or workflow (an error matching
// both) has the code of an unknown one (issue 17: nothing tells the
// sender that the id exists).
var resultCodes = []struct {
	code string
	err  error
}{
	{"event_conflict", fsm.ErrEventConflict}, {"unknown_job", fsm.ErrUnknownJob}, {"job_exists", fsm.ErrJobExists},
	{"unknown_region", fsm.ErrUnknownRegion},
	{"precedes_creation", fsm.ErrPrecedesCreation}, {"terminal", fsm.ErrTerminal},
	{"illegal_transition", fsm.ErrIllegalTransition}, {"stale_fence", fsm.ErrStaleFence},
	{"unknown_workflow", fsm.ErrUnknownWorkflow}, {"workflow_exists", fsm.ErrWorkflowExists},
	{"tenant_mismatch", fsm.ErrTenantMismatch},
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

func encodeResults(rs []fsm.Result) []ResultWire {
	out := make([]ResultWire, len(rs))
	for i, r := range rs {
		out[i] = ResultWire{Outcome: uint8(r.Outcome), Seq: r.Seq}
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

func decodeResults(ws []ResultWire) []fsm.Result {
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
func (ps *Peers) forwardBatch(ctx context.Context, leader group.Leader, batch []byte) (group.Proposal, error) {
	u, err := ps.leaderURL(leader, ProposePath)
	if err != nil {
		return group.Proposal{}, err
	}
	out, status, err := ps.postBatch(ctx, u, batch, []string{ps.cfg.NodeID})
	if err != nil {
		return group.Proposal{}, fmt.Errorf("forward to leader %s: %w", leader.ID, err)
	}
	return out.proposal(leader, status)
}

// leaderURL is path on the leader's internal API, at the address gossip
// knows for it; a *NotLeaderError (retried) when gossip does not.
func (ps *Peers) leaderURL(leader group.Leader, path string) (string, error) {
	m, ok := ps.cfg.Members.Lookup(leader.ID)
	if !ok || m.Meta.APIAddr == "" {
		return "", &group.NotLeaderError{Leader: leader, Err: fmt.Errorf("leader %s not known to gossip", leader.ID)}
	}
	return "http://" + m.Meta.APIAddr + path, nil
}

// proposal turns the leader's answer with its status into the proposal
// or the error the pipeline acts on (see Forwarder).
func (r *ProposeResponse) proposal(leader group.Leader, status int) (group.Proposal, error) {
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

// ProposeManyResponse is the leader's answer to a coalesced forward.
type ProposeManyResponse struct {
	Batches []ProposeResponse `json:"batches"`
}

// forwardMany is the coalescer's call: batches to the leader's
// propose-many endpoint in one request.
func (ps *Peers) forwardMany(ctx context.Context, leader group.Leader, batches [][]byte) ([]forwardOutcome, error) {
	if len(batches) == 1 { // the single-batch endpoint skips the envelope
		out, err := ps.forwardBatch(ctx, leader, batches[0])
		return []forwardOutcome{{out, err}}, nil
	}
	u, err := ps.leaderURL(leader, ProposeManyPath)
	if err != nil {
		return nil, err
	}
	body := group.AppendEntry(make([]byte, 0, group.EncodedEntryLen(batches)), batches)
	var out ProposeManyResponse
	status, err := ps.postInternal(ctx, u, body, []string{ps.cfg.NodeID}, &out)
	if err != nil {
		return nil, fmt.Errorf("forward to leader %s: %w", leader.ID, err)
	}
	if status != http.StatusOK {
		var whole ProposeResponse
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
func (ps *Peers) postBatch(ctx context.Context, u string, batch []byte, hops []string) (ProposeResponse, int, error) {
	var out ProposeResponse
	status, err := ps.postInternal(ctx, u, batch, hops, &out)
	return out, status, err
}

// postInternal posts body to another node's internal endpoint u and
// decodes the JSON answer into out, reading the answer to its end.
func (ps *Peers) postInternal(ctx context.Context, u string, body []byte, hops []string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+ps.cfg.ClusterToken)
	req.Header.Set("Content-Type", "application/octet-stream")
	for _, h := range hops {
		req.Header.Add(api.HeaderForwardedBy, h)
	}
	resp, err := ps.httpc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(io.LimitReader(resp.Body, maxInternalResponse)).Decode(out)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrainBytes))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("status %d: %w", resp.StatusCode, err)
	}
	return resp.StatusCode, nil
}

// message is the error an answer carries, or its status text.
func (r *ProposeResponse) message(status int) string {
	if r.Error != nil {
		return r.Error.Message
	}
	return http.StatusText(status)
}

// internalCaller answers 401 unless r carries the cluster token.
func (ps *Peers) internalCaller(w http.ResponseWriter, r *http.Request) bool {
	if !auth.PeerTokenOK(r, ps.cfg.ClusterToken) {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusUnauthorized, Code: httpx.CodeUnauthenticated, Message: "internal call without the cluster token"})
		return false
	}
	return true
}

// internalBody reads the body of an internal call, answering 413 itself
// when it is over limit.
func internalBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		httpx.WriteError(w, httpx.TooLarge(limit))
		return nil, false
	}
	return body, true
}

// handlePropose is the leader's side of forwardBatch.
func (ps *Peers) handlePropose(w http.ResponseWriter, r *http.Request) {
	if !ps.internalCaller(w, r) {
		return
	}
	batch, ok := internalBody(w, r, maxInternalBody)
	if !ok {
		return
	}
	p, err := ps.cfg.Proposer.Propose(r.Context(), batch)
	status, resp := proposeAnswer(p, err)
	httpx.WriteJSON(w, status, resp)
}

// proposeAnswer is the status and answer for one batch's outcome on the
// leader.
func proposeAnswer(p group.Proposal, err error) (int, ProposeResponse) {
	var nle *group.NotLeaderError
	switch {
	case err == nil:
		return http.StatusOK, ProposeResponse{Index: p.Index, Results: encodeResults(p.Results)}
	case errors.As(err, &nle):
		return http.StatusMisdirectedRequest, ProposeResponse{Leader: nle.Leader.ID,
			Error: &api.Error{Code: httpx.CodeUnavailable, Message: err.Error()}}
	case errors.Is(err, group.ErrInvalidBatch):
		return http.StatusBadRequest, ProposeResponse{Error: &api.Error{Code: httpx.CodeBadRequest, Message: err.Error()}}
	default:
		return http.StatusServiceUnavailable, ProposeResponse{Error: &api.Error{Code: httpx.CodeUnavailable, Message: err.Error()}}
	}
}

// handleProposeMany is the leader's side of forwardMany: 200 with one
// answer (and status) per batch, or one whole-call answer as the only
// element with the call's status (not the leader, malformed envelope).
func (ps *Peers) handleProposeMany(w http.ResponseWriter, r *http.Request) {
	if !ps.internalCaller(w, r) {
		return
	}
	body, ok := internalBody(w, r, group.MaxEntryBytes)
	if !ok {
		return
	}
	batches, err := group.DecodeEntry(body)
	if err != nil {
		status, resp := proposeAnswer(group.Proposal{}, fmt.Errorf("%w: %w", group.ErrInvalidBatch, err))
		httpx.WriteJSON(w, status, ProposeManyResponse{Batches: []ProposeResponse{resp}})
		return
	}
	if err := ps.cfg.Proposer.CheckLeader(); err != nil {
		status, resp := proposeAnswer(group.Proposal{}, err)
		httpx.WriteJSON(w, status, ProposeManyResponse{Batches: []ProposeResponse{resp}})
		return
	}
	props, errs := ps.cfg.Proposer.ProposeMany(r.Context(), batches)
	out := ProposeManyResponse{Batches: make([]ProposeResponse, len(batches))}
	for i := range batches {
		status, resp := proposeAnswer(props[i], errs[i])
		resp.Status = status
		out.Batches[i] = resp
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

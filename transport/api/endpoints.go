package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/strata-ledger/strata/fsm"
)

// One method per endpoint of DESIGN §9. Each returns the decoded body, the
// response's ResponseMeta (also on an *Error, when a node answered) and an
// error: *Error for a non-2xx status, ErrUnreachable or ErrOutcomeUnknown
// (errors.Is) when no node answered.

// SubmitJob creates a job (POST /v1/jobs). A repeated idempotency key with
// the same spec returns the existing job with Existing set. Without an
// idempotency key the submit is not repeated on another node once sent.
func (c *Client) SubmitJob(ctx context.Context, spec *SubmitJobRequest, wo WriteOptions) (*SubmitJobResponse, ResponseMeta, error) {
	q, err := writeQuery(wo)
	if err == nil && spec == nil {
		err = errors.New("submit job: nil spec")
	}
	if err != nil {
		return nil, ResponseMeta{}, err
	}
	var out SubmitJobResponse
	meta, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs", query: q, body: spec,
		retrySafe: spec.IdempotencyKey != ""}, &out)
	return result(&out, meta, err)
}

// Job reads one job's state (GET /v1/jobs/{id}).
func (c *Client) Job(ctx context.Context, id string, ro ReadOptions) (*fsm.JobState, ResponseMeta, error) {
	q, err := readQuery(ro)
	if err == nil {
		err = checkID("job id", id)
	}
	if err != nil {
		return nil, ResponseMeta{}, err
	}
	var out fsm.JobState
	meta, err := c.do(ctx, c.read("/v1/jobs/"+url.PathEscape(id), q, ro), &out)
	return result(&out, meta, err)
}

// ListJobs reads one page of jobs (GET /v1/jobs).
func (c *Client) ListJobs(ctx context.Context, jq JobQuery, ro ReadOptions) (*JobList, ResponseMeta, error) {
	q, err := readQuery(ro)
	if err != nil {
		return nil, ResponseMeta{}, err
	}
	if err := jq.validate(); err != nil {
		return nil, ResponseMeta{}, err
	}
	jq.apply(q)
	var out JobList
	meta, err := c.do(ctx, c.read("/v1/jobs", q, ro), &out)
	return result(&out, meta, err)
}

// CancelJob asks for a job's cancellation (POST /v1/jobs/{id}/cancel).
// Cancelling twice is harmless, so the call fails over like a read.
func (c *Client) CancelJob(ctx context.Context, id string, req CancelJobRequest, wo WriteOptions) (*CancelJobResponse, ResponseMeta, error) {
	q, err := writeQuery(wo)
	if err == nil {
		err = checkID("job id", id)
	}
	if err != nil {
		return nil, ResponseMeta{}, err
	}
	var out CancelJobResponse
	meta, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/" + url.PathEscape(id) + "/cancel",
		query: q, body: req, retrySafe: true}, &out)
	return result(&out, meta, err)
}

// JobEvents reads one page of a job's history (GET /v1/jobs/{id}/events).
func (c *Client) JobEvents(ctx context.Context, id string, p Page, ro ReadOptions) (*EventList, ResponseMeta, error) {
	q, err := readQuery(ro)
	if err != nil {
		return nil, ResponseMeta{}, err
	}
	if err := errors.Join(checkID("job id", id), p.validate()); err != nil {
		return nil, ResponseMeta{}, err
	}
	p.apply(q)
	var out EventList
	meta, err := c.do(ctx, c.read("/v1/jobs/"+url.PathEscape(id)+"/events", q, ro), &out)
	return result(&out, meta, err)
}

// SubmitEvents writes many events in one request (POST /v1/events:batch).
// Events are idempotent by id, so the call fails over like a read.
func (c *Client) SubmitEvents(ctx context.Context, req *BatchRequest, wo WriteOptions) (*BatchResponse, ResponseMeta, error) {
	q, err := writeQuery(wo)
	if err != nil {
		return nil, ResponseMeta{}, err
	}
	if req == nil {
		return nil, ResponseMeta{}, errors.New("submit events: nil batch")
	}
	if n := len(req.Events); n > fsm.MaxBatchEvents {
		return nil, ResponseMeta{}, fmt.Errorf("batch of %d events, over the limit of %d", n, fsm.MaxBatchEvents)
	}
	var out BatchResponse
	meta, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/events:batch", query: q, body: req,
		retrySafe: true}, &out)
	return result(&out, meta, err)
}

// WriteStatus reads what became of a write acknowledged below its tier
// (GET /v1/writes/{node}/{lsn}), by the Write of its WriteResponse: any
// node answers, forwarding to the one named. A write the token may not
// see (another tenant's) is a 404, like one that does not exist.
func (c *Client) WriteStatus(ctx context.Context, ref string) (*WriteStatus, ResponseMeta, error) {
	node, lsn, err := ParseWriteRef(ref)
	if err != nil {
		return nil, ResponseMeta{}, err
	}
	var out WriteStatus
	meta, err := c.do(ctx, request{method: http.MethodGet,
		path: "/v1/writes/" + url.PathEscape(node) + "/" + strconv.FormatUint(lsn, 10), retrySafe: true}, &out)
	return result(&out, meta, err)
}

// Members lists the nodes gossip knows (GET /v1/cluster/members).
func (c *Client) Members(ctx context.Context) (*MemberList, ResponseMeta, error) {
	var out MemberList
	meta, err := c.do(ctx, c.read("/v1/cluster/members", nil, ReadOptions{}), &out)
	return result(&out, meta, err)
}

// RaftStatus reads every Raft group as the answering node sees it (GET
// /v1/cluster/raft).
func (c *Client) RaftStatus(ctx context.Context) (*RaftStatus, ResponseMeta, error) {
	var out RaftStatus
	meta, err := c.do(ctx, c.read("/v1/cluster/raft", nil, ReadOptions{}), &out)
	return result(&out, meta, err)
}

// JoinRaft adds a server to the answering node's group (POST
// /v1/cluster/raft/join). Adding the same server again changes nothing.
func (c *Client) JoinRaft(ctx context.Context, req JoinRequest) (*OperatorResponse, ResponseMeta, error) {
	var out OperatorResponse
	meta, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/cluster/raft/join", body: req, retrySafe: true}, &out)
	return result(&out, meta, err)
}

// RemoveRaftPeer removes a server from the answering node's group (DELETE
// /v1/cluster/raft/peers/{id}).
func (c *Client) RemoveRaftPeer(ctx context.Context, id string) (*OperatorResponse, ResponseMeta, error) {
	if err := checkID("node id", id); err != nil {
		return nil, ResponseMeta{}, err
	}
	var out OperatorResponse
	meta, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/cluster/raft/peers/" + url.PathEscape(id),
		retrySafe: true}, &out)
	return result(&out, meta, err)
}

// TransferLeadership moves the leadership of the answering node's group
// (POST /v1/cluster/raft/transfer-leadership). It is not repeated on
// another node once sent: a second transfer would move it again.
func (c *Client) TransferLeadership(ctx context.Context, req TransferRequest) (*OperatorResponse, ResponseMeta, error) {
	var out OperatorResponse
	meta, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/cluster/raft/transfer-leadership", body: req}, &out)
	return result(&out, meta, err)
}

// Faults reads the fault rules of the first address's node (GET
// /v1/debug/faults) into out, a *faultnet.Rules (this package cannot import
// faultnet, whose handler uses this package's error envelope). Fault rules
// are per node, so this never fails over to another address.
func (c *Client) Faults(ctx context.Context, out any) (ResponseMeta, error) {
	return c.do(ctx, request{method: http.MethodGet, path: "/v1/debug/faults", retrySafe: true, pinned: true}, out)
}

// SetFaults replaces the fault rules of the first address's node (PUT
// /v1/debug/faults) with rules, a faultnet.Rules, and decodes the rules now
// in force into out (nil to skip). It never fails over to another address.
func (c *Client) SetFaults(ctx context.Context, rules, out any) (ResponseMeta, error) {
	return c.do(ctx, request{method: http.MethodPut, path: "/v1/debug/faults", body: rules, retrySafe: true, pinned: true}, out)
}

// Livez reports whether the first address's node is alive (GET /livez).
func (c *Client) Livez(ctx context.Context) (*Health, ResponseMeta, error) {
	return c.health(ctx, "/livez")
}

// Readyz reports whether the first address's node is ready to serve (GET
// /readyz). A node that is not ready answers 503: the returned Health says
// why and the error is an *Error with code unavailable.
func (c *Client) Readyz(ctx context.Context) (*Health, ResponseMeta, error) {
	return c.health(ctx, "/readyz")
}

func (c *Client) health(ctx context.Context, path string) (*Health, ResponseMeta, error) {
	var out Health
	meta, err := c.do(ctx, request{method: http.MethodGet, path: path, retrySafe: true, pinned: true}, &out)
	var ae *Error
	if errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable {
		// The body of a 503 is a Health, not an error envelope.
		if json.Unmarshal(meta.Body, &out) == nil && out.Status != "" {
			return &out, meta, &Error{Status: ae.Status, Code: CodeUnavailable, Message: "not ready: " + out.Reason}
		}
	}
	return result(&out, meta, err)
}

// read is a GET that fails over and carries the read options' session.
func (c *Client) read(path string, q url.Values, ro ReadOptions) request {
	return request{method: http.MethodGet, path: path, query: q, session: ro.Session, retrySafe: true}
}

func readQuery(ro ReadOptions) (url.Values, error) {
	if err := ro.Validate(); err != nil {
		return nil, err
	}
	q := url.Values{}
	ro.apply(q)
	return q, nil
}

func writeQuery(wo WriteOptions) (url.Values, error) {
	if err := wo.Validate(); err != nil {
		return nil, err
	}
	q := url.Values{}
	wo.apply(q)
	return q, nil
}

// checkID refuses an empty id, which would name another endpoint.
func checkID(what, id string) error {
	if id == "" {
		return fmt.Errorf("%s is empty", what)
	}
	return nil
}

// result drops the body of a failed call.
func result[T any](out *T, meta ResponseMeta, err error) (*T, ResponseMeta, error) {
	if err != nil {
		return nil, meta, err
	}
	return out, meta, nil
}

// VerifyChain recomputes a tenant's whole audit chain on the answering
// gate (GET /v1/chain/verify), page after page: each page continues from
// the link the one before verified, so together they check every link
// once. The answer is the last page's, with Events the pages' total and
// After 0. A broken chain is an *Error with status 409 naming the first
// broken link.
func (c *Client) VerifyChain(ctx context.Context, tenant string, ro ReadOptions) (*ChainVerification, ResponseMeta, error) {
	var (
		after  uint64
		link   string
		events int
	)
	for {
		page, meta, err := c.VerifyChainPage(ctx, tenant, ChainPageOptions{After: after, Link: link}, ro)
		if err != nil {
			return nil, meta, err
		}
		events += page.Events
		if page.Complete {
			page.After, page.Events = 0, events
			return page, meta, nil
		}
		if page.Next <= after || page.Link == "" {
			return nil, meta, fmt.Errorf("api: chain verification of %q did not advance past sequence number %d", tenant, after)
		}
		after, link = page.Next, page.Link
	}
}

// ChainPageOptions are where a page of a chain verification starts and
// how many events it may recompute.
type ChainPageOptions struct {
	// After is the sequence number the page starts after (0: the first).
	After uint64
	// Link is that event's link as the previous page verified it (its
	// answer's Link); empty takes the stored one.
	Link string
	// Limit bounds the page's events; 0 is the server's maximum.
	Limit int
}

// VerifyChainPage recomputes one page of a tenant's audit chain (GET
// /v1/chain/verify with after=, link=, limit=). A page that is not
// Complete continues with After: Next and Link: Link.
func (c *Client) VerifyChainPage(ctx context.Context, tenant string, po ChainPageOptions, ro ReadOptions) (*ChainVerification, ResponseMeta, error) {
	q, err := readQuery(ro)
	if err == nil {
		err = checkID("tenant", tenant)
	}
	if err == nil && po.Limit < 0 {
		err = fmt.Errorf("api: chain page limit %d is negative", po.Limit)
	}
	if err != nil {
		return nil, ResponseMeta{}, err
	}
	q.Set("tenant", tenant)
	if po.After > 0 {
		q.Set(ParamAfter, strconv.FormatUint(po.After, 10))
	}
	if po.Link != "" {
		q.Set(ParamLink, po.Link)
	}
	if po.Limit > 0 {
		q.Set(ParamLimit, strconv.Itoa(po.Limit))
	}
	var out ChainVerification
	meta, err := c.do(ctx, c.read("/v1/chain/verify", q, ro), &out)
	return result(&out, meta, err)
}

// JobWorkflows lists a job's workflows in the region of the answering
// manager (GET /v1/jobs/{id}/workflows; a gate forwards it to a manager of
// its region).
func (c *Client) JobWorkflows(ctx context.Context, id string, ro ReadOptions) (*WorkflowList, ResponseMeta, error) {
	q, err := readQuery(ro)
	if err == nil {
		err = checkID("job id", id)
	}
	if err != nil {
		return nil, ResponseMeta{}, err
	}
	var out WorkflowList
	meta, err := c.do(ctx, c.read("/v1/jobs/"+url.PathEscape(id)+"/workflows", q, ro), &out)
	return result(&out, meta, err)
}

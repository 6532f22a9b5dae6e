// Package api is the wire contract of Strata's HTTP API v1 (DESIGN §9): the
// request and response bodies, headers and error envelope that nodes serve
// and clients send, and a Go client. Job and event bodies are the fsm's
// JSON forms, so a client reads exactly what the ledger stores.
package api

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// Headers of every response (DESIGN §8) and of forwarded requests.
const (
	// HeaderSession is returned by every write and sent back by a client
	// for a session read: "{group}:{index}", e.g. "global:1234".
	HeaderSession = "Strata-Session"
	// HeaderIndex is the Raft index the answering node had applied.
	HeaderIndex = "Strata-Index"
	// HeaderLastContact is the milliseconds since the answering node last
	// heard from its group's leader (0 on the leader).
	HeaderLastContact = "Strata-Last-Contact"
	// HeaderLeader is the node id of the answering node's group leader,
	// empty when it knows none.
	HeaderLeader = "Strata-Leader"
	// HeaderForwardedBy is set by a node that forwards a request to
	// another node; a node never forwards a request that carries it, so a
	// request is forwarded at most once.
	HeaderForwardedBy = "Strata-Forwarded-By"
)

// Query parameters.
const (
	ParamDurability   = "durability"
	ParamConsistency  = "consistency"
	ParamMaxStaleness = "max_staleness"
)

// Read consistency levels (DESIGN §8).
const (
	ConsistencyEventual = "eventual"
	ConsistencySession  = "session"
	ConsistencyBounded  = "bounded"
	ConsistencyStrong   = "strong"
)

// Error is the body of every failed call:
// {"error":{"code":"...","message":"...","details":{}}}. Status is the
// HTTP status (not in the JSON).
type Error struct {
	Status  int            `json:"-"`
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// ErrorEnvelope wraps Error on the wire.
type ErrorEnvelope struct {
	Error *Error `json:"error"`
}

// Error codes clients branch on.
const (
	CodeBadRequest      = "bad_request"
	CodeTooLarge        = "request_too_large"
	CodeUnauthenticated = "unauthenticated"
	CodeForbidden       = "forbidden"
	CodeNotFound        = "not_found"
	CodeConflict        = "conflict"
	CodeUnavailable     = "unavailable"
	CodeTimeout         = "timeout"
	CodeTooMany         = "too_many_requests"
	CodeInternal        = "internal"
)

// SubmitJobRequest is the body of POST /v1/jobs.
type SubmitJobRequest = fsm.JobSpec

// WriteResponse is the answer to a write: the level it reached (NONE,
// LOCAL, REGIONAL or GLOBAL) and, once it reached its tier, the session
// token a client sends back for session reads (also in HeaderSession).
// A write acknowledged below its tier (durability=none or local) names
// its NodeWAL record in Write, "{node}/{lsn}": it keeps climbing to its
// tier, and GET /v1/writes/{node}/{lsn} (Client.WriteStatus) says whether
// it got there or was refused.
type WriteResponse struct {
	Durability string        `json:"durability"`
	HLC        hlc.Timestamp `json:"hlc"`
	Session    string        `json:"session,omitempty"`
	Write      string        `json:"write,omitempty"`
}

// WriteRef is the Write of a WriteResponse: the record lsn of node.
func WriteRef(node string, lsn uint64) string { return node + "/" + strconv.FormatUint(lsn, 10) }

// ParseWriteRef splits a WriteRef into its node and LSN.
func ParseWriteRef(ref string) (node string, lsn uint64, err error) {
	i := strings.LastIndexByte(ref, '/')
	if i > 0 {
		lsn, err = strconv.ParseUint(ref[i+1:], 10, 64)
	}
	if i <= 0 || err != nil || lsn == 0 {
		return "", 0, fmt.Errorf("write reference %q is not {node}/{lsn}", ref)
	}
	return ref[:i], lsn, nil
}

// Write statuses of WriteStatus.Status.
const (
	// WritePending: in the node's NodeWAL, still climbing to its tier.
	WritePending = "pending"
	// WriteReached: at its tier (Durability says which).
	WriteReached = "reached"
	// WriteRefused: the tier refused it for good; Reason says why. Its
	// events are not in the ledger: fix and resubmit them.
	WriteRefused = "refused"
	// WriteUnknown: older than the oldest refusal the node keeps (10,000):
	// it reached its tier or was refused, and which is no longer known.
	WriteUnknown = "unknown"
)

// WriteStatus is the answer to GET /v1/writes/{node}/{lsn}: what became
// of a write acknowledged below its tier.
type WriteStatus struct {
	Write  string `json:"write"`
	Node   string `json:"node"`
	LSN    uint64 `json:"lsn"`
	Status string `json:"status"`
	// Durability is what holds: NONE or LOCAL while pending, the tier
	// once reached, LOCAL when refused or unknown.
	Durability string        `json:"durability"`
	HLC        hlc.Timestamp `json:"hlc"`
	// Events are the write's event ids, when known.
	Events []fsm.EventID `json:"events,omitempty"`
	// Reason (the tier's error) and RefusedAt are set when refused.
	Reason    string     `json:"reason,omitempty"`
	RefusedAt *time.Time `json:"refused_at,omitempty"`
}

// SubmitJobResponse is the answer to POST /v1/jobs: 201 for a new job, 200
// with Existing set for a repeated idempotency key with the same body.
type SubmitJobResponse struct {
	JobID string `json:"job_id"`
	WriteResponse
	Existing bool `json:"existing,omitempty"`
	// Queued (202): the job was over its quota and asked to queue; it is
	// PENDING until admitted. QueuedBy names the limit, NextEligibleAt
	// (RFC 3339) is the first time a rate limit lets it in, empty when
	// it waits for a slot (max_active).
	Queued         bool   `json:"queued,omitempty"`
	Status         string `json:"status,omitempty"`
	QueuedBy       string `json:"queued_by,omitempty"`
	NextEligibleAt string `json:"next_eligible_at,omitempty"`
}

// CancelJobRequest is the body of POST /v1/jobs/{id}/cancel.
type CancelJobRequest struct {
	Reason    string `json:"reason"`
	Requestor string `json:"requestor"`
}

// CancelJobResponse is the answer to a cancel. Outcome is the ledger's
// (applied, duplicate, absorbed: the job had already ended) once the
// cancel reached its tier.
type CancelJobResponse struct {
	JobID string `json:"job_id"`
	WriteResponse
	Outcome string `json:"outcome,omitempty"`
}

// JobList is a page of GET /v1/jobs; NextCursor continues it.
type JobList struct {
	Jobs       []*fsm.JobState `json:"jobs"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

// EventList is a page of GET /v1/jobs/{id}/events in canonical order.
type EventList struct {
	Events     []fsm.StoredEvent `json:"events"`
	NextCursor string            `json:"next_cursor,omitempty"`
}

// BatchRequest is the body of POST /v1/events:batch.
type BatchRequest struct {
	Events []fsm.Event `json:"events"`
}

// BatchResponse is the answer to POST /v1/events:batch: one result per
// event, in request order, once the batch reached its tier (none below).
type BatchResponse struct {
	WriteResponse
	Results []EventResult `json:"results,omitempty"`
}

// EventResult is what applying one event did: outcome applied,
// duplicate, absorbed or rejected, with the reason of the last two.
type EventResult struct {
	ID fsm.EventID `json:"id"`
	// JobID is the id of the job a JobCreated made: a tenant's submits
	// get theirs from the gate.
	JobID   string `json:"job_id,omitempty"`
	Outcome string `json:"outcome"`
	Seq     uint64 `json:"seq,omitempty"`
	Error   *Error `json:"error,omitempty"`
}

// Member is one node as gossip sees it (GET /v1/cluster/members).
type Member struct {
	NodeID   string            `json:"node_id"`
	Role     string            `json:"role"`
	Region   string            `json:"region"`
	APIAddr  string            `json:"api_addr"`
	RaftAddr string            `json:"raft_addr"`
	DataAddr string            `json:"data_addr,omitempty"`
	Version  string            `json:"version"`
	Status   string            `json:"status"`          // alive, dead or left, in the node's own group pool
	Pools    map[string]string `json:"pools,omitempty"` // status per pool (lan, wan)
}

// MemberList is the answer to GET /v1/cluster/members.
type MemberList struct {
	Node    string   `json:"node"`
	Members []Member `json:"members"`
}

// RaftPeer is one server of a Raft configuration.
type RaftPeer struct {
	ID       string `json:"id"`
	Address  string `json:"address"`
	Suffrage string `json:"suffrage"` // voter, nonvoter, staging
	Leader   bool   `json:"leader"`
}

// RaftGroup is one Raft group as the answering node sees it.
type RaftGroup struct {
	Name          string     `json:"name"` // "global" or the region code
	Tier          string     `json:"tier"` // GLOBAL or REGIONAL
	State         string     `json:"state"`
	Leader        string     `json:"leader"`
	LeaderAddr    string     `json:"leader_addr"`
	Term          uint64     `json:"term"`
	CommitIndex   uint64     `json:"commit_index"`
	AppliedIndex  uint64     `json:"applied_index"`
	LastIndex     uint64     `json:"last_index"`
	LastContactMs int64      `json:"last_contact_ms"`
	Peers         []RaftPeer `json:"peers"`
	// Watermarks are the node's NodeWAL LSNs: "last" appended and the
	// highest LSN at or below which every record reached each level.
	Watermarks map[string]uint64 `json:"watermarks"`
	// Forwarder is set on a regional leader.
	Forwarder *ForwarderStatus `json:"forwarder,omitempty"`
	// DataPlane is set on a manager with a data_plane_addr: its progress
	// receiver's running totals (rates come from two readings).
	DataPlane *DataPlaneStatus `json:"data_plane,omitempty"`
}

// DataPlaneStatus is a manager's progress receiver: frames received,
// updates folded and frames (or updates) dropped since it started, and
// its receive queue's fill and backpressure level now.
type DataPlaneStatus struct {
	Frames       uint64  `json:"frames"`
	Updates      uint64  `json:"updates"`
	Dropped      uint64  `json:"dropped"`
	QueueFill    float64 `json:"queue_fill"`
	Backpressure string  `json:"backpressure"`
}

// RaftStatus is the answer to GET /v1/cluster/raft.
type RaftStatus struct {
	Node   string      `json:"node"`
	Groups []RaftGroup `json:"groups"`
}

// JoinRequest is the body of POST /v1/cluster/raft/join: add a server to
// the answering node's group (as a voter unless NonVoter).
type JoinRequest struct {
	NodeID   string `json:"node_id"`
	RaftAddr string `json:"raft_addr"`
	NonVoter bool   `json:"non_voter,omitempty"`
}

// TransferRequest is the body of POST /v1/cluster/raft/transfer-leadership;
// an empty To lets Raft pick the most up-to-date follower.
type TransferRequest struct {
	To string `json:"to,omitempty"`
}

// OperatorResponse answers a membership or leadership change.
type OperatorResponse struct {
	Group  string `json:"group"`
	Leader string `json:"leader,omitempty"`
	Index  uint64 `json:"index,omitempty"`
}

// Health is the body of /livez and /readyz; Reason says why a node is not
// ready.
type Health struct {
	Status string `json:"status"` // ok or unavailable
	Reason string `json:"reason,omitempty"`
}

// ClusterFile is cluster.json, written by `strata dev` into its data
// directory: what a CLI run from the same directory connects to by default.
type ClusterFile struct {
	DataDir string        `json:"data_dir"`
	Token   string        `json:"token"`
	Nodes   []ClusterNode `json:"nodes"`
	// Workers are the reference workers `strata dev --workers` runs: role
	// "worker", region, data dir and pid, no addresses. They are apart
	// from Nodes so a reader that knows only nodes (an older CLI) still
	// reads the file, and so the number of workers may change between
	// runs of one cluster.
	Workers []ClusterNode `json:"workers,omitempty"`
	// TLS, when set, says the nodes serve TLS: clients verify them
	// against CAFile and present the client certificate if one is named.
	TLS *ClusterTLS `json:"tls,omitempty"`
}

// ClusterTLS is what a client of a TLS cluster needs: paths of the cluster
// CA and, optionally, a client certificate and key.
type ClusterTLS struct {
	CAFile   string `json:"ca_file"`
	CertFile string `json:"cert_file,omitempty"`
	KeyFile  string `json:"key_file,omitempty"`
}

// ClusterNode is one node (or worker) of a ClusterFile.
type ClusterNode struct {
	NodeID        string `json:"node_id"`
	Role          string `json:"role"`
	Region        string `json:"region"`
	APIAddr       string `json:"api_addr"`
	RaftAddr      string `json:"raft_addr"`
	GossipAddr    string `json:"gossip_addr"`
	GossipWANAddr string `json:"gossip_wan_addr,omitempty"`
	DataPlaneAddr string `json:"data_plane_addr,omitempty"`
	DataDir       string `json:"data_dir"`
	PID           int    `json:"pid"`
}

// ForwarderStatus is a regional leader's forwarder towards the global
// ledger (DESIGN §4), in GET /v1/cluster/raft.
type ForwarderStatus struct {
	// Breaker is closed, open or half-open.
	Breaker string `json:"breaker"`
	// HalfOpenAt is when an open breaker lets its probe through.
	HalfOpenAt string `json:"half_open_at,omitempty"`
	// QueueDepth counts the events read ahead and waiting for delivery.
	QueueDepth      int    `json:"queue_depth"`
	OldestQueuedHLC string `json:"oldest_queued_hlc,omitempty"`
	LastError       string `json:"last_error,omitempty"`
}

// ChainVerification is the answer of GET /v1/chain/verify: one page of
// the tenant's chain recomputed, at most the request's limit of events
// after After. Seq and Link are the last event verified; when Complete is
// false the next page continues with after=Next and link=Link.
type ChainVerification struct {
	Tenant string `json:"tenant"`
	Seq    uint64 `json:"seq"`
	Link   string `json:"link"`
	// Verified: every link of the page (and, with Complete, of the chain
	// up to its stored head) verifies. A broken link is a 409 instead.
	Verified bool `json:"verified"`
	// After is the sequence number the page started after.
	After uint64 `json:"after"`
	// Events is how many events the page recomputed (VerifyChain: the
	// pages together).
	Events int `json:"events"`
	// Complete: the page reached the chain's stored head.
	Complete bool `json:"complete"`
	// Next is the after= of the next page; 0 when Complete.
	Next uint64 `json:"next,omitempty"`
}

// Chain verification parameters (GET /v1/chain/verify).
const (
	// ParamAfter is the sequence number a page starts after.
	ParamAfter = "after"
	// ParamLink is the link of that event as the previous page verified it.
	ParamLink = "link"
	// ParamLimit bounds a page's events (at most the server's
	// MaxVerifyEvents, its default).
	ParamLimit = "limit"
)

// WorkflowList is the answer of GET /v1/jobs/{id}/workflows: the job's
// workflows in the answering manager's region.
type WorkflowList struct {
	Region    string              `json:"region"`
	Workflows []fsm.WorkflowState `json:"workflows"`
}

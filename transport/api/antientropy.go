package api

import (
	"context"
	"net/http"
	"time"
)

// Anti-entropy kinds (GET /v1/cluster/antientropy).
const (
	AntiEntropyRegionalGlobal = "regional-global"
	AntiEntropyReplica        = "replica"
)

// AntiEntropyPair is one comparison anti-entropy runs: a region's ledger
// against the global ledger (regional-global, one per region), or the
// replicas of one Raft group (replica).
type AntiEntropyPair struct {
	Kind   string `json:"kind"`
	Region string `json:"region,omitempty"`
	Group  string `json:"group"`
	// LastRound is when the latest round started (zero: none yet).
	LastRound   time.Time `json:"last_round"`
	Rounds      uint64    `json:"rounds"`
	RootsEqual  bool      `json:"roots_equal"`
	Differences int       `json:"differences"`
	Repaired    int       `json:"repaired"`
	Bytes       int       `json:"bytes"`
	DurationMs  int64     `json:"duration_ms"`
	Error       string    `json:"error,omitempty"`
}

// AntiEntropyStatus is the answer of GET /v1/cluster/antientropy and of
// POST /v1/cluster/antientropy/run.
type AntiEntropyStatus struct {
	Pairs []AntiEntropyPair `json:"pairs"`
	// DivergentReplicas names the nodes whose ledger differs from the one
	// their group agrees on (they serve nothing until rebuilt).
	DivergentReplicas []string `json:"divergent_replicas"`
	// Unreachable names the nodes that did not answer.
	Unreachable []string `json:"unreachable,omitempty"`
}

// AntiEntropyNode is one node's part of the status (internal).
type AntiEntropyNode struct {
	Node    string `json:"node"`
	Group   string `json:"group"`
	Region  string `json:"region"`
	Leader  bool   `json:"leader"`
	Replica string `json:"replica"` // unverified, verified, divergent
	Reason  string `json:"reason,omitempty"`
	// Regional is the region's latest regional-global round, on the
	// region's leader manager.
	Regional *AntiEntropyPair `json:"regional,omitempty"`
}

// AntiEntropy reads the cluster's anti-entropy status (GET
// /v1/cluster/antientropy, operator scope).
func (c *Client) AntiEntropy(ctx context.Context) (*AntiEntropyStatus, ResponseMeta, error) {
	var out AntiEntropyStatus
	meta, err := c.do(ctx, c.read("/v1/cluster/antientropy", nil, ReadOptions{}), &out)
	return result(&out, meta, err)
}

// RunAntiEntropy has every region's leader run a regional ↔ global round
// now and returns the status once they are done (POST
// /v1/cluster/antientropy/run). Running it again is safe.
func (c *Client) RunAntiEntropy(ctx context.Context) (*AntiEntropyStatus, ResponseMeta, error) {
	var out AntiEntropyStatus
	meta, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/cluster/antientropy/run", retrySafe: true}, &out)
	return result(&out, meta, err)
}

package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
)

// What the web console (cluster/console, issue 20) needs of the API that
// no other client did: who a token is (GET /v1/auth/whoami), a region's
// workers in one call (GET /v1/workers), and the relay that lets a
// browser which reaches one node read every node (?node=ID[&via=ID]).

// Relay parameters.
const (
	// ParamNode names the node that serves a relayed GET.
	ParamNode = "node"
	// ParamVia names the node to relay through when this node does not
	// know ParamNode (a gate knows the other gates, not their managers).
	ParamVia = "via"
)

// Worker listing bounds.
const (
	// maxRelayHops bounds the nodes a relayed call goes through.
	maxRelayHops = 4
	// maxListedWorkers bounds GET /v1/workers' answer.
	maxListedWorkers = 1000
	// workersViewWait bounds the wait for the lease view: the current one
	// is wanted, not a newer one.
	workersViewWait = 50 * time.Millisecond
)

// Whoami is the answer of GET /v1/auth/whoami: what the token may do, and
// which node answered. Operator implies jobs:read and jobs:write.
type Whoami struct {
	Name   string   `json:"name"`
	Tenant string   `json:"tenant"`
	Scopes []string `json:"scopes"`
	Worker string   `json:"worker,omitempty"`
	Node   string   `json:"node"`
	Role   string   `json:"role"`
	Region string   `json:"region"`
}

func (sv *Server) handleWhoami(w http.ResponseWriter, _ *http.Request, c *call) {
	out := Whoami{Name: c.p.Name, Tenant: c.p.Tenant, Scopes: scopeNames(c.p), Worker: c.p.Worker,
		Node: sv.cfg.NodeID, Role: sv.cfg.Role.String(), Region: sv.cfg.Region}
	httpx.WriteJSON(w, http.StatusOK, out)
}

// ListedWorker is one worker of GET /v1/workers: the regional ledger's
// registry entry and the workflows the leader's lease view holds leased
// to it.
type ListedWorker struct {
	*fsm.WorkerState
	Leases []string `json:"leases"`
}

// WorkerList is the answer of GET /v1/workers.
type WorkerList struct {
	Region string `json:"region"`
	Node   string `json:"node"`
	// Backpressure is what the leader tells heartbeating workers now;
	// the fills are its commit queue's and its progress receive queue's.
	Backpressure      string         `json:"backpressure"`
	CommitQueueFill   float64        `json:"commit_queue_fill"`
	ProgressQueueFill float64        `json:"progress_queue_fill"`
	Workers           []ListedWorker `json:"workers"`
	Truncated         bool           `json:"truncated,omitempty"`
}

// handleListWorkers answers on the region's leader (rule regionLeader).
func (sv *Server) handleListWorkers(w http.ResponseWriter, r *http.Request, _ *call) {
	ws, err := sv.cfg.Ledger.Workers()
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), workersViewWait)
	view := sv.cfg.Workers.LeaseView(ctx, 0)
	cancel()
	commitFill, progressFill := sv.cfg.Writer.QueueFill(), sv.dataPlaneFill()
	out := WorkerList{Region: sv.cfg.Region, Node: sv.cfg.NodeID, Backpressure: backpressureLevel(commitFill, progressFill),
		CommitQueueFill: commitFill, ProgressQueueFill: progressFill, Workers: []ListedWorker{}}
	for _, ws := range ws {
		if len(out.Workers) == maxListedWorkers {
			out.Truncated = true
			break
		}
		lw := ListedWorker{WorkerState: ws, Leases: []string{}}
		if view != nil {
			for _, wf := range view.Leases[ws.ID] {
				lw.Leases = append(lw.Leases, wf.ID)
			}
		}
		out.Workers = append(out.Workers, lw)
	}
	sv.setReadHeaders(w)
	httpx.WriteJSON(w, http.StatusOK, out)
}

// relay serves a GET /v1/... naming another node (ParamNode) by sending it
// there: straight when gossip knows the node, else to the last node of
// ParamVia (a comma list, nearest first) that it knows. A gate knows its
// region and the other gates; a manager only its region: from a manager,
// another region's manager is node=M&via=GATE_HERE,GATE_THERE, three
// relays, so a relay may take maxRelayHops (a forward takes at most
// maxForwardHops: a relayed call that the serving node must forward again
// may be refused with 503). The token is checked here first (a relay for
// anyone would let strangers make nodes call each other); the serving
// node checks the scope. A watch is not relayed: the proxy does not
// stream.
func (sv *Server) relay(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !mayName(r.URL.RawQuery, ParamNode) { // the usual call: no query to parse (issue 19)
			next.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		node := q.Get(ParamNode)
		if node == "" || node == sv.cfg.NodeID || !strings.HasPrefix(r.URL.Path, "/v1/") {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet || strings.HasSuffix(r.URL.Path, "/watch") {
			httpx.WriteError(w, httpx.BadRequest("%s=%s: only GET calls other than watches are relayed", ParamNode, node))
			return
		}
		if _, ok := sv.principal(w, r); !ok {
			return
		}
		to, addr := sv.relayTarget(node, q.Get(ParamVia))
		if addr == "" {
			httpx.WriteError(w, &httpx.APIError{Status: http.StatusNotFound, Code: httpx.CodeNotFound,
				Message: fmt.Sprintf("node %s knows neither node %s nor a node of %s=%s", sv.cfg.NodeID, node, ParamVia, q.Get(ParamVia)),
				Details: map[string]any{"node": to}})
			return
		}
		hops := sv.hops(r)
		if len(hops) >= maxRelayHops || slices.Contains(hops, sv.cfg.NodeID) {
			httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable,
				Message: fmt.Sprintf("node %s would relay to %s a call already relayed by %s", sv.cfg.NodeID, to, strings.Join(hops, ", "))})
			return
		}
		sv.send(w, r, addr, nil, hops)
	})
}

// relayTarget is where a call for node goes from here: node itself when
// gossip knows it, else the last node of the via list that it knows
// (this node left out); addr "" when none.
func (sv *Server) relayTarget(node, via string) (id, addr string) {
	if m, ok := sv.cfg.Members.Lookup(node); ok && m.Meta.APIAddr != "" {
		return node, m.Meta.APIAddr
	}
	if via == "" {
		return node, ""
	}
	path := strings.Split(via, ",")
	if len(path) > maxRelayHops {
		return node, ""
	}
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == sv.cfg.NodeID {
			continue
		}
		if m, ok := sv.cfg.Members.Lookup(path[i]); ok && m.Meta.APIAddr != "" {
			return path[i], m.Meta.APIAddr
		}
	}
	return node, ""
}

// scopeNames are the scopes of p as strings.
func scopeNames(p auth.Principal) []string {
	out := make([]string, 0, len(p.Scopes))
	for _, s := range p.Scopes {
		out = append(out, string(s))
	}
	return out
}

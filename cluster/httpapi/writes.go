package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/wal"
)

// GET /v1/writes/{node}/{lsn}: what became of a write acknowledged below
// its tier (issue 17 finding 9). Its WriteResponse named the NodeWAL
// record, "{node}/{lsn}"; the record climbs to its tier, and is either
// there or was refused for good (the leader refused the batch), which
// the node keeps (commit.Refusal) so that the client can read it instead
// of losing its write silently.
//
// Any node answers: one that is not the node named forwards the call to
// it (gossip gives its address), or answers 404 naming it when it does
// not know it. A token sees only writes whose every event is of a tenant
// it may read or write; any other write, and a write that does not
// exist, is the same 404, so the route reveals nothing of other tenants.

// writeStatuses is what the route asks of the Writer: the commit
// pipeline implements it.
type writeStatuses interface {
	WriteStatus(lsn wal.LSN) (commit.WriteStatus, error)
}

func (sv *Server) handleWriteStatus(w http.ResponseWriter, r *http.Request, c *call) {
	node := r.PathValue("node")
	lsn, err := strconv.ParseUint(r.PathValue("lsn"), 10, 64)
	if err != nil || lsn == 0 || node == "" {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: fmt.Sprintf("write %q/%q: want /v1/writes/{node}/{lsn} with an LSN ≥ 1", node, r.PathValue("lsn"))})
		return
	}
	ref := api.WriteRef(node, lsn)
	if node != sv.cfg.NodeID {
		m, ok := sv.cfg.Members.Lookup(node)
		if !ok || m.Meta.APIAddr == "" {
			httpx.WriteError(w, &httpx.APIError{Status: http.StatusNotFound, Code: httpx.CodeNotFound,
				Message: fmt.Sprintf("write %s is kept by node %s, which node %s does not know: ask node %s", ref, node, sv.cfg.NodeID, node),
				Details: map[string]any{"node": node}})
			return
		}
		sv.proxy(w, r, m.Meta.APIAddr, nil)
		return
	}
	notFound := &httpx.APIError{Status: http.StatusNotFound, Code: httpx.CodeNotFound,
		Message: fmt.Sprintf("no write %s visible to token %s", ref, c.p.Name)}
	ws, ok := sv.cfg.Writer.(writeStatuses)
	if !ok {
		httpx.WriteError(w, notFound)
		return
	}
	st, err := ws.WriteStatus(wal.LSN(lsn))
	switch {
	case errors.Is(err, commit.ErrNoSuchWrite):
		httpx.WriteError(w, notFound)
		return
	case errors.Is(err, commit.ErrWriteStatusBusy):
		w.Header().Set("Retry-After", "1")
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable, Message: err.Error()})
		return
	case err != nil:
		httpx.WriteError(w, err)
		return
	case !seesWrite(c.p, st.Tenants):
		httpx.WriteError(w, notFound)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, writeStatusBody(node, st))
}

// seesWrite reports whether p may read a write whose events are of
// tenants: read or write scope on each of them. Unknown tenants (nil),
// and events of no tenant (""), are for tokens of all tenants only.
func seesWrite(p auth.Principal, tenants []string) bool {
	if tenants == nil {
		tenants = []string{auth.AllTenants}
	}
	for _, t := range tenants {
		if t == "" {
			t = auth.AllTenants
		}
		if !p.Allows(auth.ScopeJobsRead, t) && !p.Allows(auth.ScopeJobsWrite, t) {
			return false
		}
	}
	return true
}

// writeStatusBody is the answer for st, a write of node.
func writeStatusBody(node string, st commit.WriteStatus) api.WriteStatus {
	out := api.WriteStatus{Write: api.WriteRef(node, uint64(st.LSN)), Node: node, LSN: uint64(st.LSN),
		Status: st.State.String(), Durability: st.Level.String(), HLC: st.HLC, Events: st.Events}
	if r := st.Refusal; r != nil {
		at := r.At.UTC()
		out.Reason, out.RefusedAt = r.Reason, &at
	}
	return out
}

package httpapi

import (
	"errors"
	"net/http"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// handleVerifyChain recomputes a tenant's audit chain on this node
// (GET /v1/chain/verify?tenant=, DESIGN §9): 200 with the head when every
// link verifies, 409 with the first broken link otherwise. Served by
// gates (the global ledger's chain); a manager forwards it to its
// region's gate like every job read.
func (sv *Server) handleVerifyChain(w http.ResponseWriter, r *http.Request, c *call) {
	p := c.p
	tenant := r.URL.Query().Get("tenant")
	if tenant == "" {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest, Message: "tenant is required",
			Details: map[string]any{"field": "tenant"}})
		return
	}
	if !p.Allows(auth.ScopeJobsRead, tenant) {
		httpx.WriteError(w, forbidden(p, auth.ScopeJobsRead, tenant))
		return
	}
	head, err := sv.cfg.Ledger.VerifyChain(tenant)
	var ce *fsm.ChainError
	switch {
	case errors.As(err, &ce):
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusConflict, Code: httpx.CodeConflict, Message: ce.Error(),
			Details: map[string]any{"seq": ce.Seq, "event_id": ce.EventID.String(), "job_id": ce.JobID}})
		return
	case err != nil:
		httpx.WriteError(w, readError(err))
		return
	}
	sv.setReadHeaders(w)
	httpx.WriteJSON(w, http.StatusOK, api.ChainVerification{Tenant: tenant, Seq: head.Seq, Link: head.Link.String(), Verified: true})
}

package httpapi

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// MaxVerifyEvents bounds the events one chain verification recomputes
// (issue 17, finding 8): each costs a read, a body encoding and two
// SHA-256s (about half a microsecond from memory, so some 50 ms at
// 100,000 before the store's reads), so one request is bounded work, and
// a longer chain verifies in pages, each resuming after the last.
const MaxVerifyEvents = 100_000

// handleVerifyChain recomputes a page of a tenant's audit chain on this
// node (GET /v1/chain/verify?tenant=&after=&link=&limit=, DESIGN §9): at
// most limit (default and at most MaxVerifyEvents) events after the event
// of sequence number after (0: from the first), continuing from link,
// that event's link as the previous page verified it. 200 with the last
// verified event, and next when the chain goes on; 409 with the first
// broken link. Served by gates (the global ledger's chain); a manager
// forwards it to its region's gate like every job read.
func (sv *Server) handleVerifyChain(w http.ResponseWriter, r *http.Request, c *call) {
	p := c.p
	q := r.URL.Query()
	tenant := q.Get("tenant")
	if tenant == "" {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest, Message: "tenant is required",
			Details: map[string]any{"field": "tenant"}})
		return
	}
	if !p.Allows(auth.ScopeJobsRead, tenant) {
		httpx.WriteError(w, forbidden(p, auth.ScopeJobsRead, tenant))
		return
	}
	cur, err := parseVerifyCursor(q.Get(api.ParamAfter), q.Get(api.ParamLink), q.Get(api.ParamLimit))
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	page, err := sv.cfg.Ledger.VerifyChainPage(tenant, cur.after, cur.link, cur.limit)
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
	out := api.ChainVerification{Tenant: tenant, Seq: page.Head.Seq, Link: page.Head.Link.String(), Verified: true,
		After: cur.after, Events: page.Events, Complete: page.Done}
	if !page.Done {
		out.Next = page.Head.Seq
	}
	sv.setReadHeaders(w)
	httpx.WriteJSON(w, http.StatusOK, out)
}

// verifyCursor is a chain verification page's start and size.
type verifyCursor struct {
	after uint64
	link  *fsm.Hash
	limit int
}

// parseVerifyCursor reads after=, link= and limit= of a chain
// verification; a limit above MaxVerifyEvents is a 400 naming it.
func parseVerifyCursor(after, link, limit string) (verifyCursor, error) {
	bad := func(field, format string, args ...any) error {
		return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: field + " " + fmt.Sprintf(format, args...), Details: map[string]any{"field": field}}
	}
	cur := verifyCursor{limit: MaxVerifyEvents}
	if after != "" {
		v, err := strconv.ParseUint(after, 10, 64)
		if err != nil {
			return cur, bad(api.ParamAfter, "%.40q is not a sequence number (an unsigned integer)", after)
		}
		cur.after = v
	}
	if link != "" {
		var h fsm.Hash
		if len(link) != 2*len(h) {
			return cur, bad(api.ParamLink, "%.80q is not a chain link (64 hex digits)", link)
		}
		if _, err := hex.Decode(h[:], []byte(link)); err != nil {
			return cur, bad(api.ParamLink, "%.80q is not a chain link (64 hex digits)", link)
		}
		if cur.after == 0 {
			return cur, bad(api.ParamLink, "needs after=, the sequence number of its event")
		}
		cur.link = &h
	}
	if limit != "" {
		v, err := strconv.ParseUint(limit, 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			v, err = math.MaxUint64, nil
		}
		switch {
		case err == nil && v > MaxVerifyEvents:
			return cur, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
				Message: fmt.Sprintf("limit %d is over the %d events one chain verification recomputes; continue with after=", v, MaxVerifyEvents),
				Details: map[string]any{"field": api.ParamLimit, "limit": MaxVerifyEvents}}
		case err != nil || v < 1:
			return cur, bad(api.ParamLimit, "%.40q must be 1..%d", limit, MaxVerifyEvents)
		}
		cur.limit = int(v)
	}
	return cur, nil
}

package httpapi

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
)

// The route wrapper: authentication, scope, and routing to the node that
// serves a call happen here, once per route, before the handler runs.

// access is who may call a route.
type access uint8

const (
	// public routes take no token (/livez, /readyz).
	public access = iota
	// anyToken routes take any valid token; the handler checks the scope
	// on the tenant the call names.
	anyToken
	// operatorOnly routes need the operator scope for all tenants.
	operatorOnly
	// workerToken routes need a token that acts for the worker the path
	// names ({id}): a worker token bound to it, or an operator's. A route
	// without {id} (registration) checks the id in its body.
	workerToken
)

// home is the node that serves a route; another node forwards the call.
type home uint8

const (
	// anyNode serves it (the handler may still forward, by consistency or
	// by what the body holds).
	anyNode home = iota
	// gates serve job calls: a manager forwards to a gate of its region.
	gates
	// managers serve calls on the regional ledger: a gate forwards to a
	// manager of its region.
	managers
	// regionLeader serves worker calls: a gate forwards to a manager of
	// its region, a follower manager to its leader (which keeps the
	// workers' liveness and the lease view).
	regionLeader
)

// rule is a route's access, home and prelude.
type rule struct {
	access access
	home   home
	// body: the wrapper reads the request body (bounded) and hands it to
	// the handler, or forwards it.
	body bool
	// read: the wrapper parses consistency= and makes the node fit to
	// answer at that consistency (cluster/DESIGN.md "Reads") once the
	// call is home.
	read bool
	// beforeForward adjusts a call this node forwards (a lease poll's wait).
	beforeForward func(*http.Request)
}

// call is what the wrapper learned of a request.
type call struct {
	p    auth.Principal
	body []byte
}

// handler is a route's handler behind the wrapper.
type handler func(w http.ResponseWriter, r *http.Request, c *call)

// guard wraps h with rule: authenticate, check scope, read the body, forward
// the call to its home, prepare the read; then h.
func (sv *Server) guard(ru rule, h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := &call{}
		if ru.access != public {
			p, ok := sv.principal(w, r)
			if !ok {
				return
			}
			if err := ru.access.check(p, r.PathValue("id")); err != nil {
				httpx.WriteError(w, err)
				return
			}
			if !sv.allow(w, r, p) { // per-token API rate limit (gov_ratelimit.go)
				return
			}
			c.p = p
		}
		if ru.body {
			body, err := readBody(r)
			if err != nil {
				httpx.WriteError(w, err)
				return
			}
			c.body = body
		}
		if sv.forward(ru, w, r, c.body) {
			return
		}
		if ru.read && !sv.readPrelude(w, r) {
			return
		}
		h(w, r, c)
	}
}

// check is nil when p may call a route of access a; worker is the {id}
// of the path ("" if it has none).
func (a access) check(p auth.Principal, worker string) error {
	switch a {
	case operatorOnly:
		if !p.Allows(auth.ScopeOperator, auth.AllTenants) {
			return forbidden(p, auth.ScopeOperator, "")
		}
	case workerToken:
		return workerAccess(p, worker)
	}
	return nil
}

// workerAccess is nil when p may act for worker id (any worker token, if
// id is "": the handler checks the id in the body).
func workerAccess(p auth.Principal, id string) error {
	if id == "" && (p.IsOperator() || slices.Contains(p.Scopes, auth.ScopeWorker)) {
		return nil
	}
	if id != "" && p.ActsFor(id) {
		return nil
	}
	msg := fmt.Sprintf("token %s may not act for worker %q: worker calls need a %s token bound to that worker, or an operator token", p.Name, id, auth.ScopeWorker)
	if id == "" {
		msg = fmt.Sprintf("token %s is not a worker token: worker calls need scope %s or an operator token", p.Name, auth.ScopeWorker)
	}
	return &httpx.APIError{Status: http.StatusForbidden, Code: httpx.CodeForbidden, Message: msg,
		Details: map[string]any{"scope": string(auth.ScopeWorker), "worker": id}}
}

// forward sends a call that is not home here to its home; true when it
// did (or failed trying: the error is written). A call that was not read
// (no rule.body) is forwarded with its body read here.
func (sv *Server) forward(ru rule, w http.ResponseWriter, r *http.Request, body []byte) bool {
	to, ok := destination(ru.home, sv.cfg.Role, sv.cfg.Consensus.IsLeader())
	if !ok {
		return false
	}
	if body == nil && !ru.body {
		var err error
		if body, err = readBody(r); err != nil {
			httpx.WriteError(w, err)
			return true
		}
	}
	if ru.beforeForward != nil {
		ru.beforeForward(r)
	}
	if to == toLeader {
		sv.forwardToLeader(w, r, body, "worker calls are served by the regional leader")
	} else {
		sv.forwardToRole(w, r, body, to)
	}
	return true
}

// toLeader is destination's answer for "this group's leader".
const toLeader Role = "leader"

// destination is where a call of home goes from a node of role (leading
// its group or not): a role of this region, toLeader, or nowhere (ok
// false: it is served here).
func destination(h home, role Role, leading bool) (to Role, ok bool) {
	switch {
	case h == gates && role != RoleGate:
		return RoleGate, true
	case (h == managers || h == regionLeader) && role == RoleGate:
		return RoleManager, true
	case h == regionLeader && !leading:
		return toLeader, true
	}
	return "", false
}

package httpapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
)

func TestDestination(t *testing.T) {
	tests := []struct {
		name    string
		home    home
		role    Role
		leading bool
		to      Role
		ok      bool
	}{
		{"any node serves it", anyNode, RoleManager, false, "", false},
		{"a gate serves a job call", gates, RoleGate, false, "", false},
		{"a manager forwards a job call to a gate", gates, RoleManager, true, RoleGate, true},
		{"a gate forwards a regional read to a manager", managers, RoleGate, true, RoleManager, true},
		{"a follower manager serves a regional read", managers, RoleManager, false, "", false},
		{"a gate forwards a worker call to a manager", regionLeader, RoleGate, true, RoleManager, true},
		{"a follower manager forwards a worker call to its leader", regionLeader, RoleManager, false, toLeader, true},
		{"the leading manager serves a worker call", regionLeader, RoleManager, true, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			to, ok := destination(tt.home, tt.role, tt.leading)
			if to != tt.to || ok != tt.ok {
				t.Fatalf("destination = %q, %v; want %q, %v", to, ok, tt.to, tt.ok)
			}
		})
	}
}

func TestAccessCheck(t *testing.T) {
	reader := auth.Principal{Name: "r", Tenant: "acme", Scopes: []auth.Scope{auth.ScopeJobsRead}}
	tenantWriter := auth.Principal{Name: "w", Tenant: "acme", Scopes: []auth.Scope{auth.ScopeJobsWrite}}
	allWriter := auth.Principal{Name: "w", Tenant: auth.AllTenants, Scopes: []auth.Scope{auth.ScopeJobsWrite}}
	op := auth.Principal{Name: "o", Tenant: auth.AllTenants, Scopes: []auth.Scope{auth.ScopeOperator}}
	w1 := auth.Principal{Name: "w1", Tenant: auth.AllTenants, Scopes: []auth.Scope{auth.ScopeWorker}, Worker: "w1"}
	fleet := auth.Principal{Name: "f", Tenant: auth.AllTenants, Scopes: []auth.Scope{auth.ScopeWorker}, Worker: auth.AnyWorker}
	tests := []struct {
		name   string
		access access
		p      auth.Principal
		worker string // the path's {id}
		status int    // 0: allowed
	}{
		{"any token reads", anyToken, reader, "", 0},
		{"a reader is no operator", operatorOnly, reader, "", http.StatusForbidden},
		{"an operator operates", operatorOnly, op, "", 0},
		{"a tenant's writer is no worker", workerToken, tenantWriter, "w1", http.StatusForbidden},
		{"an all-tenant writer is no worker either", workerToken, allWriter, "w1", http.StatusForbidden},
		{"a worker token acts for its worker", workerToken, w1, "w1", 0},
		{"a worker token does not act for another", workerToken, w1, "w2", http.StatusForbidden},
		{"a worker token registers (the body's id is checked later)", workerToken, w1, "", 0},
		{"a fleet token acts for any worker", workerToken, fleet, "w2", 0},
		{"an operator acts for any worker", workerToken, op, "w2", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.access.check(tt.p, tt.worker)
			var ae *httpx.APIError
			switch {
			case tt.status == 0 && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.status != 0 && (!errors.As(err, &ae) || ae.Status != tt.status):
				t.Fatalf("got %v, want status %d", err, tt.status)
			}
		})
	}
}

// Finding 4 of issue 17: a metric label never carries a client's method.
func TestMethodLabel_FixedSet(t *testing.T) {
	for m, want := range map[string]string{"GET": "GET", "POST": "POST", "DELETE": "DELETE", "get": "other",
		"PROPFIND": "other", strings.Repeat("M", 1<<20): "other"} {
		if got := methodLabel(m); got != want {
			t.Errorf("methodLabel(%.20q) = %q, want %q", m, got, want)
		}
	}
}

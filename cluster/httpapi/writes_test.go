package httpapi

import (
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/transport/api"
)

// A write is seen only by a token that may read or write every tenant of
// its events; unknown tenants and tenant-less (worker) events only by a
// token of all tenants.
func TestSeesWrite_OnlyTheWritesTenantsTokens(t *testing.T) {
	reader := auth.Principal{Name: "r", Tenant: "acme", Scopes: []auth.Scope{auth.ScopeJobsRead}}
	writer := auth.Principal{Name: "w", Tenant: "acme", Scopes: []auth.Scope{auth.ScopeJobsWrite}}
	other := auth.Principal{Name: "o", Tenant: "beta", Scopes: []auth.Scope{auth.ScopeJobsRead, auth.ScopeJobsWrite}}
	all := auth.Principal{Name: "a", Tenant: auth.AllTenants, Scopes: []auth.Scope{auth.ScopeJobsRead}}
	none := auth.Principal{Name: "n", Tenant: auth.AllTenants}
	tests := []struct {
		name    string
		tenants []string
		sees    map[string]bool // by principal name
	}{
		{"one tenant", []string{"acme"}, map[string]bool{"r": true, "w": true, "o": false, "a": true, "n": false}},
		{"two tenants", []string{"acme", "beta"}, map[string]bool{"r": false, "w": false, "o": false, "a": true, "n": false}},
		{"worker events", []string{""}, map[string]bool{"r": false, "w": false, "o": false, "a": true, "n": false}},
		{"unknown", nil, map[string]bool{"r": false, "w": false, "o": false, "a": true, "n": false}},
	}
	for _, tt := range tests {
		for _, p := range []auth.Principal{reader, writer, other, all, none} {
			if got := seesWrite(p, tt.tenants); got != tt.sees[p.Name] {
				t.Errorf("%s: token %s sees it: %v, want %v", tt.name, p.Name, got, tt.sees[p.Name])
			}
		}
	}
}

func TestWriteStatusBody_NamesTheWriteAndARefusalsReason(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	st := commit.WriteStatus{LSN: 9, State: commit.WriteRefused, Level: commit.DurabilityLocal,
		Refusal: &commit.Refusal{Node: "m1", LSN: 9, At: at, Reason: "leader m2: bad"}}
	got := writeStatusBody("m1", st)
	if got.Write != "m1/9" || got.Status != api.WriteRefused || got.Durability != "LOCAL" ||
		got.Reason != "leader m2: bad" || got.RefusedAt == nil || !got.RefusedAt.Equal(at) {
		t.Fatalf("body %+v", got)
	}
	for s, want := range map[commit.WriteState]string{commit.WritePending: api.WritePending,
		commit.WriteReached: api.WriteReached, commit.WriteRefused: api.WriteRefused, commit.WriteUnknown: api.WriteUnknown} {
		if s.String() != want {
			t.Errorf("state %d is %q on the wire, the API says %q", s, s, want)
		}
	}
}

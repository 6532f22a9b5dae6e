package auth

import (
	"net/http/httptest"
	"testing"
)

// The operator scope implies every finer operator scope; a finer scope
// allows only itself, and is accepted in configuration.
func TestScopes_OperatorImpliesTheFinerOperatorScopes(t *testing.T) {
	a, err := NewAuthenticator([]TokenConfig{
		{Token: "operator-all-012345678", Tenant: "*", Scopes: []string{"operator"}},
		{Token: "quota-admin-012345678", Tenant: "*", Scopes: []string{"quota:write"}},
		{Token: "throttler-012345678901", Tenant: "*", Scopes: []string{"throttle:write", "jobs:read"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		token string
		scope Scope
		want  bool
	}{
		{"operator-all-012345678", ScopeQuotaWrite, true},
		{"operator-all-012345678", ScopeThrottleWrite, true},
		{"operator-all-012345678", ScopeBreakerWrite, true},
		{"operator-all-012345678", ScopeMaintenanceWrite, true},
		{"quota-admin-012345678", ScopeQuotaWrite, true},
		{"quota-admin-012345678", ScopeThrottleWrite, false},
		{"quota-admin-012345678", ScopeOperator, false},
		{"quota-admin-012345678", ScopeJobsWrite, false},
		{"throttler-012345678901", ScopeThrottleWrite, true},
		{"throttler-012345678901", ScopeQuotaWrite, false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/v1/quotas", nil)
		r.Header.Set("Authorization", "Bearer "+tt.token)
		p, err := a.Authenticate(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Allows(tt.scope, AllTenants); got != tt.want {
			t.Errorf("%s allows %s: %v, want %v", tt.token, tt.scope, got, tt.want)
		}
	}
	for _, s := range OperatorScopes {
		if !knownScope(s) {
			t.Errorf("scope %s is not accepted in configuration", s)
		}
	}
}

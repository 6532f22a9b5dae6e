package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestAuthenticator_ScopesAndTenants(t *testing.T) {
	a, err := NewAuthenticator([]TokenConfig{
		{Token: "reader-acme-0123456789", Tenant: "acme", Scopes: []string{"jobs:read"}},
		{Token: "writer-acme-0123456789", Tenant: "acme", Scopes: []string{"jobs:read", "jobs:write"}},
		{Token: "operator-all-012345678", Tenant: "*", Scopes: []string{"operator"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		header string
		scope  Scope
		tenant string
		want   error // from Authenticate, or ErrForbidden from Allows
	}{
		{"no header", "", ScopeJobsRead, "acme", ErrUnauthenticated},
		{"not bearer", "Basic abc", ScopeJobsRead, "acme", ErrUnauthenticated},
		{"unknown token", "Bearer nope-nope-nope-nope", ScopeJobsRead, "acme", ErrUnauthenticated},
		{"reader reads own tenant", "Bearer reader-acme-0123456789", ScopeJobsRead, "acme", nil},
		{"reader cannot write", "Bearer reader-acme-0123456789", ScopeJobsWrite, "acme", ErrForbidden},
		{"reader cannot see other tenant", "Bearer reader-acme-0123456789", ScopeJobsRead, "globex", ErrForbidden},
		{"writer writes own tenant", "Bearer writer-acme-0123456789", ScopeJobsWrite, "acme", nil},
		{"writer is no operator", "Bearer writer-acme-0123456789", ScopeOperator, "acme", ErrForbidden},
		{"operator does everything", "Bearer operator-all-012345678", ScopeJobsWrite, "globex", nil},
		// Finding 10 of issue 17: the scheme is case-insensitive (RFC 9110 §11.1).
		{"lower-case scheme", "bearer reader-acme-0123456789", ScopeJobsRead, "acme", nil},
		{"upper-case scheme", "BEARER reader-acme-0123456789", ScopeJobsRead, "acme", nil},
		{"scheme without token", "Bearer ", ScopeJobsRead, "acme", ErrUnauthenticated},
		{"token without scheme", "reader-acme-0123456789", ScopeJobsRead, "acme", ErrUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			p, err := a.Authenticate(r)
			if err == nil && !p.Allows(tt.scope, tt.tenant) {
				err = ErrForbidden
			}
			if !errors.Is(err, tt.want) && !(err == nil && tt.want == nil) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestNewAuthenticator_RejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		tok  TokenConfig
	}{
		{"short token", TokenConfig{Token: "short", Tenant: "acme", Scopes: []string{"jobs:read"}}},
		{"no tenant", TokenConfig{Token: "long-enough-token-123", Scopes: []string{"jobs:read"}}},
		{"no scopes", TokenConfig{Token: "long-enough-token-123", Tenant: "acme"}},
		{"unknown scope", TokenConfig{Token: "long-enough-token-123", Tenant: "acme", Scopes: []string{"jobs:delete"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewAuthenticator([]TokenConfig{tt.tok}); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	dup := TokenConfig{Token: "long-enough-token-123", Tenant: "acme", Scopes: []string{"jobs:read"}}
	if _, err := NewAuthenticator([]TokenConfig{dup, dup}); err == nil {
		t.Fatal("duplicate token accepted")
	}
}

func TestNewBootstrapToken_IsUsableOperatorToken(t *testing.T) {
	tok, err := NewBootstrapToken()
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAuthenticator([]TokenConfig{tok})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer "+tok.Token)
	p, err := a.Authenticate(r)
	if err != nil || !p.Allows(ScopeOperator, "any") {
		t.Fatalf("bootstrap token: %+v, %v", p, err)
	}
}

func TestFinding10_BearerSchemeIsCaseInsensitive(t *testing.T) {
	const tok = "cluster-token-0123456789"
	for _, h := range []string{"Bearer " + tok, "bearer " + tok, "BeArEr " + tok} {
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set("Authorization", h)
		if !PeerTokenOK(r, tok) {
			t.Errorf("%q refused", h)
		}
	}
	for _, h := range []string{"", "Bearer", "Bearer x" + tok, "Basic " + tok, tok} {
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set("Authorization", h)
		if PeerTokenOK(r, tok) {
			t.Errorf("%q accepted", h)
		}
	}
}

func TestAuthenticator_WorkerTokensAreBoundToAWorker(t *testing.T) {
	bad := []TokenConfig{
		{Token: "worker-no-id-0123456789", Tenant: "*", Scopes: []string{"worker"}},
		{Token: "worker-tenant-012345678", Tenant: "acme", Scopes: []string{"worker"}, Worker: "w1"},
		{Token: "writer-with-id-01234567", Tenant: "*", Scopes: []string{"jobs:write"}, Worker: "w1"},
	}
	for _, tc := range bad {
		if _, err := NewAuthenticator([]TokenConfig{tc}); err == nil {
			t.Errorf("%+v accepted", tc)
		}
	}
	a, err := NewAuthenticator([]TokenConfig{
		{Token: "worker-w1-0123456789", Tenant: "*", Scopes: []string{"worker"}, Worker: "w1"},
		{Token: "worker-fleet-01234567", Tenant: "*", Scopes: []string{"worker"}, Worker: AnyWorker},
		{Token: "writer-all-0123456789", Tenant: "*", Scopes: []string{"jobs:write"}},
		{Token: "operator-all-01234567", Tenant: "*", Scopes: []string{"operator"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		token, worker string
		want          bool
	}{
		{"worker-w1-0123456789", "w1", true},
		{"worker-w1-0123456789", "w2", false},
		{"worker-fleet-01234567", "w2", true},
		{"writer-all-0123456789", "w1", false},
		{"operator-all-01234567", "w1", true},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+tt.token)
		p, err := a.Authenticate(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.ActsFor(tt.worker); got != tt.want {
			t.Errorf("%s acts for %s: %v, want %v", tt.token, tt.worker, got, tt.want)
		}
	}
}

func TestDataPlaneKey_PerRegistration(t *testing.T) {
	id1, k1 := DataPlaneKey("cluster-secret-0123456789", "w1", []byte{1, 2, 3})
	id1b, k1b := DataPlaneKey("cluster-secret-0123456789", "w1", []byte{1, 2, 3})
	if id1 != id1b || string(k1) != string(k1b) || len(k1) != DataPlaneKeyBytes {
		t.Fatalf("not deterministic: %d %x / %d %x", id1, k1, id1b, k1b)
	}
	for _, other := range []struct {
		token, worker string
		reg           []byte
	}{
		{"cluster-secret-0123456789", "w1", []byte{1, 2, 4}},  // re-registration
		{"cluster-secret-0123456789", "w2", []byte{1, 2, 3}},  // another worker
		{"another-secret-0123456789", "w1", []byte{1, 2, 3}},  // another cluster
		{"cluster-secret-0123456789", "w1\x00", []byte{2, 3}}, // shifted parts
	} {
		id, k := DataPlaneKey(other.token, other.worker, other.reg)
		if string(k) == string(k1) {
			t.Fatalf("%+v: same key", other)
		}
		if other.token == "cluster-secret-0123456789" && id == id1 {
			t.Fatalf("%+v: same key id", other)
		}
	}
}

func TestAuthenticator_HashedTokensAndReplace(t *testing.T) {
	const secret = "a-token-of-the-operator"
	sum := sha256.Sum256([]byte(secret))
	a, err := NewAuthenticator([]TokenConfig{{Token: HashedTokenPrefix + hex.EncodeToString(sum[:]), Tenant: AllTenants, Scopes: []string{"operator"}}})
	if err != nil {
		t.Fatal(err)
	}
	req := func(tok string) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return r
	}
	if _, err := a.Authenticate(req(secret)); err != nil {
		t.Fatalf("the secret of a hashed token: %v", err)
	}
	if _, err := a.Authenticate(req(HashedTokenPrefix + hex.EncodeToString(sum[:]))); err == nil {
		t.Fatal("the hash itself authenticated")
	}
	if _, err := NewAuthenticator([]TokenConfig{{Token: "sha256:abcd", Tenant: "t", Scopes: []string{"jobs:read"}}}); err == nil {
		t.Fatal("a short hash was accepted")
	}
	// Replace: a bad set changes nothing; a good one revokes the old token.
	if err := a.Replace([]TokenConfig{{Token: "short", Tenant: "t", Scopes: []string{"jobs:read"}}}); err == nil {
		t.Fatal("Replace accepted a bad token")
	}
	if _, err := a.Authenticate(req(secret)); err != nil {
		t.Fatalf("after a refused Replace: %v", err)
	}
	if err := a.Replace([]TokenConfig{{Token: "another-token-0123456", Tenant: "t", Scopes: []string{"jobs:read"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(req(secret)); err == nil {
		t.Fatal("a revoked token still authenticates")
	}
	if _, err := a.Authenticate(req("another-token-0123456")); err != nil || a.Len() != 1 {
		t.Fatalf("the new token: %v (len %d)", err, a.Len())
	}
}

package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
)

// Scope is a permission a bearer token carries (DESIGN §9).
type Scope string

// The scopes of the API.
const (
	ScopeJobsRead  Scope = "jobs:read"
	ScopeJobsWrite Scope = "jobs:write"
	ScopeOperator  Scope = "operator"
	// ScopeWorker lets a token act as one worker (TokenConfig.Worker):
	// register it, heartbeat, poll its leases and report on them.
	ScopeWorker Scope = "worker"
)

// Finer operator scopes (issue 18): each lets a token make one kind of
// fleet governance change. ScopeOperator implies every one of them (see
// Allows), so an operator token, the dev token included, can do
// everything; a token may hold one alone to do only that.
const (
	ScopeQuotaWrite       Scope = "quota:write"
	ScopeThrottleWrite    Scope = "throttle:write"
	ScopeBreakerWrite     Scope = "breaker:write"
	ScopeMaintenanceWrite Scope = "maintenance:write"
)

// OperatorScopes lists the finer operator scopes, which ScopeOperator
// implies.
var OperatorScopes = []Scope{ScopeQuotaWrite, ScopeThrottleWrite, ScopeBreakerWrite, ScopeMaintenanceWrite}

// knownScope reports whether s is a scope of this version.
func knownScope(s Scope) bool {
	switch s {
	case ScopeJobsRead, ScopeJobsWrite, ScopeOperator, ScopeWorker:
		return true
	}
	return slices.Contains(OperatorScopes, s)
}

// AnyWorker binds a worker token to every worker id (a fleet-wide token;
// the lease fence still limits each report to the lease it names).
const AnyWorker = "*"

// AllTenants binds a token to every tenant.
const AllTenants = "*"

// MinTokenLen keeps guessable tokens out of configuration.
const MinTokenLen = 16

// HashedTokenPrefix marks a token configured by its digest,
// "sha256:<64 hex digits>" (`printf %s TOKEN | sha256sum`), so the config
// file never holds the secret.
const HashedTokenPrefix = "sha256:"

// Errors of authentication and authorization; the HTTP layer maps them to
// 401 and 403.
var (
	ErrUnauthenticated = errors.New("missing or unknown bearer token")
	ErrForbidden       = errors.New("token lacks the scope or tenant")
)

// TokenConfig is one bearer token as configured.
type TokenConfig struct {
	Token  string   `koanf:"token" json:"token"`
	Tenant string   `koanf:"tenant" json:"tenant"`
	Scopes []string `koanf:"scopes" json:"scopes"`
	// Worker binds a token with the worker scope to one worker id, or to
	// every worker (AnyWorker). Required with that scope, refused without.
	Worker string `koanf:"worker" json:"worker,omitempty"`
}

// Principal is what a verified token may do.
type Principal struct {
	Name   string // a short, non-secret token fingerprint for logs
	Tenant string // AllTenants or one tenant id
	Scopes []Scope
	Worker string // the worker id a worker token acts for, AnyWorker, or ""
}

// Allows reports whether p may use scope on tenant. An operator token bound
// to all tenants may do everything.
func (p Principal) Allows(scope Scope, tenant string) bool {
	if p.Tenant != AllTenants && p.Tenant != tenant {
		return false
	}
	return slices.Contains(p.Scopes, scope) || (scope != ScopeOperator && slices.Contains(p.Scopes, ScopeOperator))
}

// ActsFor reports whether p may act as worker id: an operator, or a
// worker token bound to that id (or to every worker).
func (p Principal) ActsFor(id string) bool {
	if p.Allows(ScopeOperator, AllTenants) {
		return true
	}
	return slices.Contains(p.Scopes, ScopeWorker) && (p.Worker == AnyWorker || p.Worker == id)
}

// IsOperator reports whether p holds the operator scope for all tenants,
// the principal trusted like a node (docs/SECURITY.md).
func (p Principal) IsOperator() bool { return p.Allows(ScopeOperator, AllTenants) }

// SeesTenant reports whether p may read or write tenant at all.
func (p Principal) SeesTenant(tenant string) bool {
	return p.Tenant == AllTenants || p.Tenant == tenant
}

// Authenticator verifies bearer tokens. Tokens are kept as SHA-256 digests
// and compared in constant time, so neither memory dumps nor timing reveal
// them. Its token set changes only as a whole (Replace, on SIGHUP); it is
// safe for concurrent use.
type Authenticator struct {
	byDigest atomic.Pointer[map[[sha256.Size]byte]Principal]
}

// NewAuthenticator checks every token and its scopes.
func NewAuthenticator(tokens []TokenConfig) (*Authenticator, error) {
	m, err := digestTokens(tokens)
	if err != nil {
		return nil, err
	}
	a := &Authenticator{}
	a.byDigest.Store(&m)
	return a, nil
}

// Replace checks tokens as NewAuthenticator does and, if they are valid,
// makes them the only tokens accepted from now on; else nothing changes.
func (a *Authenticator) Replace(tokens []TokenConfig) error {
	m, err := digestTokens(tokens)
	if err != nil {
		return err
	}
	a.byDigest.Store(&m)
	return nil
}

// Len is how many tokens are accepted.
func (a *Authenticator) Len() int { return len(*a.byDigest.Load()) }

// tokenDigest is the digest of a configured token: given as
// "sha256:<hex>", or computed from the secret (at least MinTokenLen long).
func tokenDigest(tok string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	if h, ok := strings.CutPrefix(tok, HashedTokenPrefix); ok {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != sha256.Size {
			return d, fmt.Errorf("%s token: want %d hex digits", HashedTokenPrefix, 2*sha256.Size)
		}
		copy(d[:], b)
		return d, nil
	}
	if len(tok) < MinTokenLen {
		return d, fmt.Errorf("shorter than %d characters", MinTokenLen)
	}
	return sha256.Sum256([]byte(tok)), nil
}

func digestTokens(tokens []TokenConfig) (map[[sha256.Size]byte]Principal, error) {
	byDigest := make(map[[sha256.Size]byte]Principal, len(tokens))
	for i, t := range tokens {
		d, err := tokenDigest(t.Token)
		if err != nil {
			return nil, fmt.Errorf("token %d: %w", i, err)
		}
		if t.Tenant == "" {
			return nil, fmt.Errorf("token %d: tenant is required (a tenant id or %q)", i, AllTenants)
		}
		if len(t.Scopes) == 0 {
			return nil, fmt.Errorf("token %d: no scopes", i)
		}
		p := Principal{Tenant: t.Tenant, Worker: t.Worker}
		for _, s := range t.Scopes {
			switch sc := Scope(s); {
			case knownScope(sc):
				p.Scopes = append(p.Scopes, sc)
			default:
				return nil, fmt.Errorf("token %d: unknown scope %q (want %s, %s, %s, %s or one of %v)", i, s, ScopeJobsRead, ScopeJobsWrite, ScopeOperator, ScopeWorker, OperatorScopes)
			}
		}
		if err := checkWorkerBinding(p); err != nil {
			return nil, fmt.Errorf("token %d: %w", i, err)
		}
		if _, dup := byDigest[d]; dup {
			return nil, fmt.Errorf("token %d: configured twice", i)
		}
		p.Name = hex.EncodeToString(d[:4])
		byDigest[d] = p
	}
	return byDigest, nil
}

// checkWorkerBinding: a worker-scoped token names its worker, any other
// token names none, and a worker token is bound to all tenants (a worker
// runs any tenant's workflows).
func checkWorkerBinding(p Principal) error {
	worker := slices.Contains(p.Scopes, ScopeWorker)
	switch {
	case worker && p.Worker == "":
		return fmt.Errorf("scope %s needs worker: the worker id it acts for, or %q", ScopeWorker, AnyWorker)
	case !worker && p.Worker != "":
		return fmt.Errorf("worker %q is set but the token lacks scope %s", p.Worker, ScopeWorker)
	case worker && p.Tenant != AllTenants:
		return fmt.Errorf("a %s token runs every tenant's workflows: tenant must be %q", ScopeWorker, AllTenants)
	case len(p.Worker) > maxWorkerBytes:
		return fmt.Errorf("worker %q is longer than %d bytes", p.Worker, maxWorkerBytes)
	}
	return nil
}

// maxWorkerBytes is fsm.MaxNameBytes (a worker id), kept here so auth
// stays free of the ledger package.
const maxWorkerBytes = 64

// Authenticate resolves the request's bearer token.
func (a *Authenticator) Authenticate(r *http.Request) (Principal, error) {
	tok, ok := bearer(r)
	if !ok {
		return Principal{}, ErrUnauthenticated
	}
	// The lookup is keyed by the digest, never the secret, so its timing
	// says nothing about how close a guess was.
	p, ok := (*a.byDigest.Load())[sha256.Sum256([]byte(tok))]
	if !ok {
		return Principal{}, ErrUnauthenticated
	}
	return p, nil
}

// NewBootstrapToken returns a random operator token for all tenants, as
// `strata dev` prints it.
func NewBootstrapToken() (TokenConfig, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return TokenConfig{}, fmt.Errorf("bootstrap token: %w", err)
	}
	return TokenConfig{
		Token:  "strata-" + hex.EncodeToString(b[:]),
		Tenant: AllTenants,
		Scopes: []string{string(ScopeOperator), string(ScopeJobsRead), string(ScopeJobsWrite)},
	}, nil
}

// PeerTokenOK checks the internal API (node-to-node calls)'s bearer token in constant time.
func PeerTokenOK(r *http.Request, token string) bool {
	got, ok := bearer(r)
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// bearer returns the token of r's "Authorization: Bearer <token>" header.
// The scheme is case-insensitive (RFC 9110 §11.1), so "bearer" and
// "BEARER" work as "Bearer" does.
func bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	return tok, tok != ""
}

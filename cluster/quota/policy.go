package quota

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/strata-ledger/strata/fsm"
)

// Governance kinds of this package (fsm.Policy.Kind).
const (
	// Kind holds tenant quota policies, keyed by Key(tenant, jobType).
	Kind = "quota"
	// FleetKind holds the fleet capacity policy, under FleetKey.
	FleetKind = "quota_fleet"
	// FleetKey is the one key of FleetKind.
	FleetKey = "fleet"
)

// Limits of a policy's numbers.
const (
	// MaxActiveLimit bounds max_active and the fleet capacity.
	MaxActiveLimit = 1_000_000
	// MaxPerHourLimit bounds max_per_hour and burst.
	MaxPerHourLimit = 10_000_000
	// MaxWeight bounds a tenant's fleet weight.
	MaxWeight = 10_000
)

// ErrInvalid is a policy that breaks a rule (400 at the API).
var ErrInvalid = errors.New("quota: invalid policy")

// Policy is a tenant's quota, optionally for one job type. Zero means
// "no limit" for max_active and max_per_hour; burst defaults to
// max_per_hour. Weight (default 1) and Reserved shape the tenant's share
// of the fleet capacity (FleetPolicy).
type Policy struct {
	Tenant     string `json:"tenant"`
	JobType    string `json:"job_type,omitempty"`
	MaxActive  uint32 `json:"max_active,omitempty"`
	MaxPerHour uint32 `json:"max_per_hour,omitempty"`
	Burst      uint32 `json:"burst,omitempty"`
	Weight     uint32 `json:"weight,omitempty"`
	Reserved   uint32 `json:"reserved,omitempty"`
}

// Key is the governance key of a tenant's policy, and its id in the API
// (PUT /v1/quotas/policies/{id}): the tenant, or tenant:jobType for one
// job type (':' is in no name, so the two never collide).
func Key(tenant, jobType string) string {
	if jobType == "" {
		return tenant
	}
	return tenant + ":" + jobType
}

// Key is p's governance key.
func (p *Policy) Key() string { return Key(p.Tenant, p.JobType) }

// Validate checks p's fields and bounds.
func (p *Policy) Validate() error {
	switch {
	case !fsm.IsName(p.Tenant):
		return fmt.Errorf("%w: tenant %q is not a name of [A-Za-z0-9._-]", ErrInvalid, p.Tenant)
	case p.JobType != "" && !fsm.IsName(p.JobType):
		return fmt.Errorf("%w: job_type %q is not a name of [A-Za-z0-9._-]", ErrInvalid, p.JobType)
	case p.MaxActive > MaxActiveLimit:
		return fmt.Errorf("%w: max_active %d is over %d", ErrInvalid, p.MaxActive, MaxActiveLimit)
	case p.MaxPerHour > MaxPerHourLimit || p.Burst > MaxPerHourLimit:
		return fmt.Errorf("%w: max_per_hour and burst are at most %d", ErrInvalid, MaxPerHourLimit)
	case p.Burst > 0 && p.MaxPerHour == 0:
		return fmt.Errorf("%w: burst needs max_per_hour", ErrInvalid)
	case p.Weight > MaxWeight:
		return fmt.Errorf("%w: weight %d is over %d", ErrInvalid, p.Weight, MaxWeight)
	case p.Reserved > MaxActiveLimit:
		return fmt.Errorf("%w: reserved %d is over %d", ErrInvalid, p.Reserved, MaxActiveLimit)
	case p.MaxActive == 0 && p.MaxPerHour == 0 && p.Weight == 0 && p.Reserved == 0:
		return fmt.Errorf("%w: a policy sets at least one of max_active, max_per_hour, weight, reserved", ErrInvalid)
	}
	return nil
}

// BurstOrDefault is the submit bucket's capacity: burst, or max_per_hour.
func (p *Policy) BurstOrDefault() uint32 {
	if p.Burst > 0 {
		return p.Burst
	}
	return p.MaxPerHour
}

// Strategy is how the fleet capacity is shared among the tenants with a
// policy.
type Strategy string

// Allocation strategies.
const (
	// Fixed: each tenant gets its own max_active (the capacity caps the
	// sum only as far as Allocate cuts the largest first).
	Fixed Strategy = "fixed"
	// EqualShare: capacity split equally (max-min fair over demand).
	EqualShare Strategy = "equal"
	// Proportional: capacity split by weight (weighted max-min fair).
	Proportional Strategy = "proportional"
	// ReservedFair: each tenant's reserved minimum first, the rest fair
	// (equal) among them.
	ReservedFair Strategy = "reserved"
)

// FleetPolicy is the fleet's capacity and how it is shared.
type FleetPolicy struct {
	Capacity uint32   `json:"capacity"`
	Strategy Strategy `json:"strategy"`
}

// Validate checks f.
func (f *FleetPolicy) Validate() error {
	switch {
	case f.Capacity == 0 || f.Capacity > MaxActiveLimit:
		return fmt.Errorf("%w: capacity must be in [1, %d]", ErrInvalid, MaxActiveLimit)
	case f.Strategy != Fixed && f.Strategy != EqualShare && f.Strategy != Proportional && f.Strategy != ReservedFair:
		return fmt.Errorf("%w: strategy %q is not one of fixed, equal, proportional, reserved", ErrInvalid, f.Strategy)
	}
	return nil
}

// decodePolicy reads a governance record of Kind.
func decodePolicy(r *fsm.Policy) (*Policy, error) {
	var p Policy
	if err := json.Unmarshal(r.Value, &p); err != nil {
		return nil, fmt.Errorf("quota: policy %s: %w", r.Key, err)
	}
	return &p, nil
}

// Encode is the governance value of p (compact JSON).
func (p *Policy) Encode() (json.RawMessage, error) { return json.Marshal(p) }

// Encode is the governance value of f (compact JSON).
func (f *FleetPolicy) Encode() (json.RawMessage, error) { return json.Marshal(f) }

// ReadPolicy returns the policy under (tenant, jobType), or nil.
func ReadPolicy(tx fsm.ReadTx, tenant, jobType string) (*Policy, error) {
	r, err := tx.Policy(Kind, Key(tenant, jobType))
	if err != nil || r == nil {
		return nil, err
	}
	return decodePolicy(r)
}

// ReadFleet returns the fleet policy, or nil.
func ReadFleet(tx fsm.ReadTx) (*FleetPolicy, error) {
	r, err := tx.Policy(FleetKind, FleetKey)
	if err != nil || r == nil {
		return nil, err
	}
	var f FleetPolicy
	if err := json.Unmarshal(r.Value, &f); err != nil {
		return nil, fmt.Errorf("quota: fleet policy: %w", err)
	}
	return &f, nil
}

// ReadPolicies returns every tenant policy, in key order.
func ReadPolicies(tx fsm.ReadTx) ([]*Policy, error) {
	var out []*Policy
	err := tx.Policies(Kind, func(r *fsm.Policy) error {
		p, err := decodePolicy(r)
		if err == nil {
			out = append(out, p)
		}
		return err
	})
	return out, err
}

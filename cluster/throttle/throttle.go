// Package throttle decides operator throttles (issue 18 §2): an operator
// pauses a tenant, a job type, or one tenant's job type, and resumes it
// later. A pause is a governance record of the global ledger (kind Kind,
// changed through Raft, audited with its reason and ticket); while it
// holds, the global reconciler neither dispatches the paused jobs that
// have not started nor admits queued ones. Paused work keeps its state
// (a PENDING job stays PENDING, a queued one queued), and the first pass
// after the resume carries on where it stopped. Work already running in
// the regions runs on: a pause stops new work, it does not cancel.
//
// Everything here is pure: functions of the state an fsm.ReadTx reads.
package throttle

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/strata-ledger/strata/fsm"
)

// Kind is the governance kind of throttles.
const Kind = "throttle"

// ErrInvalid is a throttle request that breaks a rule (400).
var ErrInvalid = errors.New("throttle: invalid")

// Target is what a throttle pauses: a tenant, a job type (every tenant's),
// or one tenant's job type.
type Target struct {
	Tenant  string `json:"tenant,omitempty"`
	JobType string `json:"job_type,omitempty"`
}

// Validate checks t names something.
func (t Target) Validate() error {
	switch {
	case t.Tenant == "" && t.JobType == "":
		return fmt.Errorf("%w: a throttle names a tenant, a job_type, or both", ErrInvalid)
	case t.Tenant != "" && !fsm.IsName(t.Tenant):
		return fmt.Errorf("%w: tenant %q is not a name of [A-Za-z0-9._-]", ErrInvalid, t.Tenant)
	case t.JobType != "" && !fsm.IsName(t.JobType):
		return fmt.Errorf("%w: job_type %q is not a name of [A-Za-z0-9._-]", ErrInvalid, t.JobType)
	}
	return nil
}

// Key is the governance key of t: "t:{tenant}", "j:{type}" or
// "t:{tenant}/j:{type}".
func (t Target) Key() string {
	var parts []string
	if t.Tenant != "" {
		parts = append(parts, "t:"+t.Tenant)
	}
	if t.JobType != "" {
		parts = append(parts, "j:"+t.JobType)
	}
	return strings.Join(parts, "/")
}

// Value is what a pause record holds (its audit fields are the record's).
type Value struct {
	Target
	Paused bool `json:"paused"`
}

// Encode is the governance value of a pause of t.
func Encode(t Target) (json.RawMessage, error) { return json.Marshal(Value{Target: t, Paused: true}) }

// Paused reports whether jobs of tenant and jobType are paused: by a
// pause of the tenant, of the job type, or of the tenant's job type.
func Paused(tx fsm.ReadTx, tenant, jobType string) (bool, error) {
	keys := []Target{{Tenant: tenant}}
	if jobType != "" {
		keys = append(keys, Target{JobType: jobType}, Target{Tenant: tenant, JobType: jobType})
	}
	for _, k := range keys {
		r, err := tx.Policy(Kind, k.Key())
		if err != nil {
			return false, err
		}
		if r != nil {
			return true, nil
		}
	}
	return false, nil
}

// Throttle is one pause as the API lists it.
type Throttle struct {
	Target
	Paused    bool   `json:"paused"`
	Reason    string `json:"reason,omitempty"`
	Ticket    string `json:"ticket,omitempty"`
	Requestor string `json:"requestor,omitempty"`
	HLC       string `json:"hlc"`
}

// List returns every pause, visible to see (a tenant filter), in key
// order.
func List(tx fsm.ReadTx, see func(tenant string) bool) ([]Throttle, error) {
	var out []Throttle
	err := tx.Policies(Kind, func(r *fsm.Policy) error {
		var v Value
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("throttle %s: %w", r.Key, err)
		}
		if v.Tenant != "" && !see(v.Tenant) {
			return nil
		}
		out = append(out, Throttle{Target: v.Target, Paused: true, Reason: r.Reason, Ticket: r.Ticket,
			Requestor: r.Requestor, HLC: r.HLC.String()})
		return nil
	})
	return out, err
}

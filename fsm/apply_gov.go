package fsm

import (
	"errors"
	"fmt"
)

// applyGovernance applies a governance event to the governance state, in
// arrival (Raft) order like the workflow rules: PolicySet replaces the
// record, PolicyDeleted removes it. A record belongs to the tenant of the
// event that created it (empty: fleet-wide); a change carrying another
// tenant is rejected as if the record did not exist, naming no tenant.
func (a *applier) applyGovernance(e *Event) (Result, error) {
	switch b := e.Body.(type) {
	case *PolicySet:
		old, err := a.tx.Policy(b.Kind, b.Key)
		if err != nil {
			return Result{}, err
		}
		if old != nil && old.Tenant != e.Tenant {
			return rejected(fmt.Errorf("policy %s/%s: %w", b.Kind, b.Key, ErrTenantMismatch)), nil
		}
		if old == nil {
			n, err := a.countPolicies(b.Kind)
			if err != nil {
				return Result{}, err
			}
			if n >= MaxPoliciesPerKind {
				return rejected(fmt.Errorf("policy %s/%s: %w", b.Kind, b.Key,
					&LimitError{Field: "policies of kind " + b.Kind, Limit: MaxPoliciesPerKind, Got: n + 1})), nil
			}
		}
		p := &Policy{Kind: b.Kind, Key: b.Key, Tenant: e.Tenant, Value: b.Value, HLC: e.HLC,
			Requestor: b.Requestor, Reason: b.Reason, Ticket: b.Ticket}
		a.changed = append(a.changed, StateKey{StatePolicy, PolicyStateID(b.Kind, b.Key)})
		return Result{Outcome: OutcomeApplied}, a.tx.PutPolicy(p)
	case *PolicyDeleted:
		old, err := a.tx.Policy(b.Kind, b.Key)
		if err != nil {
			return Result{}, err
		}
		if old == nil || old.Tenant != e.Tenant {
			return rejected(fmt.Errorf("policy %s/%s: %w", b.Kind, b.Key, ErrUnknownPolicy)), nil
		}
		a.changed = append(a.changed, StateKey{StatePolicy, PolicyStateID(b.Kind, b.Key)})
		if err := a.dropMeter(b.Kind, b.Key); err != nil {
			return Result{}, err
		}
		return Result{Outcome: OutcomeApplied}, a.tx.DeletePolicy(b.Kind, b.Key)
	}
	return rejected(fieldErr("type", fmt.Sprintf("%s has no governance rule", e.Type))), nil
}

// countPolicies counts the records of kind, stopping at the limit.
func (a *applier) countPolicies(kind string) (int, error) {
	n := 0
	err := a.tx.Policies(kind, func(*Policy) error {
		n++
		if n >= MaxPoliciesPerKind {
			return errStopCount
		}
		return nil
	})
	if err == errStopCount {
		err = nil
	}
	return n, err
}

var errStopCount = errors.New("fsm: stop counting")

// PolicyStateID is a record's id among the state keys (StatePolicy):
// kind and key joined by a 0 byte, which neither holds.
func PolicyStateID(kind, key string) string { return kind + "\x00" + key }

// splitPolicyStateID reverses PolicyStateID.
func splitPolicyStateID(id string) (kind, key string, ok bool) {
	for i := 0; i < len(id); i++ {
		if id[i] == 0 {
			return id[:i], id[i+1:], true
		}
	}
	return "", "", false
}

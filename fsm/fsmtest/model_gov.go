package fsmtest

import (
	"slices"
	"strings"

	"github.com/strata-ledger/strata/fsm"
)

// applyGovernance: the record under (kind, key) is the last PolicySet
// applied, gone after a PolicyDeleted; a change carrying another tenant
// than the record's, a delete of nothing, and a new key past the kind's
// limit are rejected.
func (m *Model) applyGovernance(e *fsm.Event) fsm.Result {
	switch b := e.Body.(type) {
	case *fsm.PolicySet:
		id := fsm.PolicyStateID(b.Kind, b.Key)
		old := m.policies[id]
		if old != nil && old.Tenant != e.Tenant {
			return reject(fsm.ErrTenantMismatch)
		}
		if old == nil {
			n := 0
			for _, p := range m.policies {
				if p.Kind == b.Kind {
					n++
				}
			}
			if n >= fsm.MaxPoliciesPerKind {
				return reject(fsm.ErrLimit)
			}
		}
		m.policies[id] = &fsm.Policy{Kind: b.Kind, Key: b.Key, Tenant: e.Tenant, Value: b.Value, HLC: e.HLC,
			Requestor: b.Requestor, Reason: b.Reason, Ticket: b.Ticket}
	case *fsm.PolicyDeleted:
		id := fsm.PolicyStateID(b.Kind, b.Key)
		if old := m.policies[id]; old == nil || old.Tenant != e.Tenant {
			return reject(fsm.ErrUnknownPolicy)
		}
		delete(m.policies, id)
		delete(m.meters, id) // a meter goes with its record
	}
	return fsm.Result{Outcome: fsm.OutcomeApplied}
}

// Policies returns every governance record in (kind, key) order.
func (m *Model) Policies() []*fsm.Policy {
	var ps []*fsm.Policy
	for _, p := range m.policies {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *fsm.Policy) int {
		return strings.Compare(fsm.PolicyStateID(a.Kind, a.Key), fsm.PolicyStateID(b.Kind, b.Key))
	})
	return ps
}

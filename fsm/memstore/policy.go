package memstore

import (
	"strings"

	"github.com/strata-ledger/strata/fsm"
)

// Governance records: a map by fsm.PolicyStateID(kind, key) (kind ‖ 0 ‖
// key, so byte order is (kind, key) order) and its sorted ids.

func (t *tx) Policy(kind, key string) (*fsm.Policy, error) {
	return t.st.policies[fsm.PolicyStateID(kind, key)], nil
}

func (t *tx) Policies(kind string, fn func(*fsm.Policy) error) error {
	ids := t.st.policyIDs
	prefix := ""
	if kind != "" {
		prefix = kind + "\x00"
		ids = ids[lowerBound(ids, prefix):]
	}
	for _, id := range ids {
		if !strings.HasPrefix(id, prefix) {
			return nil
		}
		if err := fn(t.st.policies[id]); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) PutPolicy(p *fsm.Policy) error {
	if !t.write {
		return errReadOnly
	}
	id := fsm.PolicyStateID(p.Kind, p.Key)
	t.log(undo{kind: undoPolicy, key: id, pol: t.st.policies[id]})
	t.st.setPolicy(id, p)
	return nil
}

func (t *tx) DeletePolicy(kind, key string) error {
	if !t.write {
		return errReadOnly
	}
	id := fsm.PolicyStateID(kind, key)
	old := t.st.policies[id]
	if old == nil {
		return nil
	}
	t.log(undo{kind: undoPolicy, key: id, pol: old})
	t.st.setPolicy(id, nil)
	return nil
}

// setPolicy stores p under id, or removes the record if p is nil.
func (st *state) setPolicy(id string, p *fsm.Policy) {
	if p == nil {
		delete(st.policies, id)
		st.policyIDs = removeSorted(st.policyIDs, id)
		return
	}
	st.policies[id] = p
	st.policyIDs = insertSorted(st.policyIDs, id)
}

// lowerBound returns the index of the first id not below s.
func lowerBound(ids []string, s string) int {
	lo, hi := 0, len(ids)
	for lo < hi {
		m := (lo + hi) / 2
		if ids[m] < s {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

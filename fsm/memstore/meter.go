package memstore

import "github.com/strata-ledger/strata/fsm"

// Rate meters: a map by fsm.PolicyStateID(kind, key) of their record and
// its sorted ids, like governance records.

func (t *tx) Meter(kind, key string) (*fsm.Meter, error) {
	return t.st.meters[fsm.PolicyStateID(kind, key)], nil
}

func (t *tx) Meters(fn func(*fsm.Meter) error) error {
	for _, id := range t.st.meterIDs {
		if err := fn(t.st.meters[id]); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) PutMeter(m *fsm.Meter) error {
	if !t.write {
		return errReadOnly
	}
	id := fsm.PolicyStateID(m.Kind, m.Key)
	t.log(undo{kind: undoMeter, key: id, mtr: t.st.meters[id]})
	t.st.setMeter(id, m)
	return nil
}

func (t *tx) DeleteMeter(kind, key string) error {
	if !t.write {
		return errReadOnly
	}
	id := fsm.PolicyStateID(kind, key)
	old := t.st.meters[id]
	if old == nil {
		return nil
	}
	t.log(undo{kind: undoMeter, key: id, mtr: old})
	t.st.setMeter(id, nil)
	return nil
}

// setMeter stores m under id, or removes the meter if m is nil.
func (st *state) setMeter(id string, m *fsm.Meter) {
	if m == nil {
		delete(st.meters, id)
		st.meterIDs = removeSorted(st.meterIDs, id)
		return
	}
	st.meters[id] = m
	st.meterIDs = insertSorted(st.meterIDs, id)
}

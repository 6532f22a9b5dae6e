package fsmtest

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/strata-ledger/strata/fsm"
)

// Rate meters in the store suite: a small deterministic rule the Ledger
// runs as its Config.Meter (MeterTestHook) and the Model applies on its
// own (its maps, its order), so the two check the ledger's part — meters
// stored, held jobs, meters dropped with their record, snapshots — and
// not a quota's arithmetic (cluster/quota tests that).
//
// The rule: a job is metered by the governance records ("quota", "k0")
// and ("quota", "k1") that exist and are its tenant's or fleet-wide. A
// record's value {"n":N} makes a bucket of N%4+1 tokens of
// testUnitsPerToken units, refilled one unit per ms; each new job takes a
// token, and one that finds none is held until its token is earned.
const testUnitsPerToken = 100

// testMeterKeys are the governance keys the rule meters by.
var testMeterKeys = []string{"k0", "k1"}

// testMeterStep takes a token of meter m (nil: a full bucket) of
// capacity n tokens at atMs: the new meter and, if the job must wait,
// when (0: now).
func testMeterStep(m *fsm.Meter, kind, key string, n int64, atMs int64) (fsm.Meter, int64) {
	capUnits := (n%4 + 1) * testUnitsPerToken
	next := fsm.Meter{Kind: kind, Key: key, Level: capUnits, AtMs: atMs}
	if m != nil {
		next.Level, next.AtMs = m.Level, m.AtMs
		if atMs > next.AtMs {
			next.Level = min(capUnits, next.Level+(atMs-next.AtMs))
			next.AtMs = atMs
		}
	}
	next.Level -= testUnitsPerToken
	if next.Level >= 0 {
		return next, 0
	}
	return next, next.AtMs - next.Level
}

// testPolicyN reads the N of a test record's value (0 if it has none).
func testPolicyN(p *fsm.Policy) int64 {
	var v struct{ N int64 }
	if json.Unmarshal(p.Value, &v) != nil || v.N < 0 {
		return 0
	}
	return v.N
}

// MeterTestHook is the rule above as an fsm.MeterHook.
func MeterTestHook(tx fsm.ReadTx, job *fsm.JobState, atMs int64) (fsm.MeterDecision, error) {
	var d fsm.MeterDecision
	for _, key := range testMeterKeys {
		p, err := tx.Policy("quota", key)
		if err != nil {
			return d, err
		}
		if p == nil || p.Tenant != "" && p.Tenant != job.Tenant {
			continue
		}
		m, err := tx.Meter("quota", key)
		if err != nil {
			return d, err
		}
		next, until := testMeterStep(m, "quota", key, testPolicyN(p), atMs)
		d.Meters = append(d.Meters, next)
		d.HoldUntilMs = max(d.HoldUntilMs, until)
	}
	return d, nil
}

// meterCreate applies the rule to a job the model created: its meters
// change and it may be held (m.holds, applied by every fold of the job).
func (m *Model) meterCreate(e *fsm.Event) {
	until := int64(0)
	for _, key := range testMeterKeys {
		id := fsm.PolicyStateID("quota", key)
		p := m.policies[id]
		if p == nil || p.Tenant != "" && p.Tenant != e.Tenant {
			continue
		}
		next, u := testMeterStep(m.meters[id], "quota", key, testPolicyN(p), e.HLC.WallMs)
		m.meters[id] = &next
		until = max(until, u)
	}
	if until > 0 {
		m.holds[e.JobID] = until
	}
}

// fold is naiveFold of a job's events with the meters' hold of the job.
func (m *Model) fold(evs []*fsm.Event) *fsm.JobState {
	var id string
	for _, e := range evs {
		if e.Type == fsm.TypeJobCreated {
			id = e.JobID
		}
	}
	return naiveFold(evs, m.holds[id])
}

// Meters returns every rate meter in (kind, key) order.
func (m *Model) Meters() []*fsm.Meter {
	var ms []*fsm.Meter
	for _, x := range m.meters {
		ms = append(ms, x)
	}
	slices.SortFunc(ms, func(a, b *fsm.Meter) int {
		return strings.Compare(fsm.PolicyStateID(a.Kind, a.Key), fsm.PolicyStateID(b.Kind, b.Key))
	})
	return ms
}

// HeldByMeter counts the jobs the rule held.
func (m *Model) HeldByMeter() int { return len(m.holds) }

package fsmtest

import (
	"bytes"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// RunGovernanceAgainstModel drives streams with the governance extension
// (extended job specs, held jobs and JobAdmitted, PolicySet and
// PolicyDeleted of several tenants) through the Ledger, metering new jobs
// with MeterTestHook, and the Model, compares everything (governance
// records, rate meters and jobs held by them included), then snapshots
// and restores into a fresh store: same records, same governance digest,
// and the restored ledger goes on like the model.
func RunGovernanceAgainstModel(t *testing.T, newStore NewStore) {
	held := 0 // jobs held by a meter, over every seed
	defer func() {
		if held == 0 && !t.Failed() {
			t.Fatal("no stream held a job by a meter: the meters are not tested")
		}
	}()
	for _, seed := range Seeds(1) {
		t.Logf("seed %d (reproduce with STRATA_FSM_SEED=%d)", seed, seed)
		led := newMeteredLedger(t, newStore)
		m := NewMeteredModel()
		gen := NewGovGen(seed)
		DriveGen(t, gen, seed, led, m, 1500, 0)
		CompareWithModel(t, led, m)
		admitted, policies := 0, len(m.Policies())
		for _, id := range m.JobIDs() {
			if m.Job(id).Admitted {
				admitted++
			}
		}
		if admitted == 0 || policies == 0 {
			t.Fatalf("seed %d: the stream admitted %d jobs and left %d policies: it tests nothing", seed, admitted, policies)
		}
		held += m.HeldByMeter()
		var snap bytes.Buffer
		if err := led.Snapshot(&snap); err != nil {
			t.Fatal(err)
		}
		restored := newMeteredLedger(t, newStore)
		if err := restored.Restore(bytes.NewReader(snap.Bytes())); err != nil {
			t.Fatalf("seed %d: restore: %v", seed, err)
		}
		CompareWithModel(t, restored, m)
		want, _, err := led.GovernanceDigest()
		if err != nil {
			t.Fatal(err)
		}
		if got, _, err := restored.GovernanceDigest(); err != nil || got != want {
			t.Fatalf("seed %d: governance digest after restore %s (%v), want %s", seed, got, err, want)
		}
		var records bytes.Buffer
		if err := restored.SnapshotRecords(&records); err != nil {
			t.Fatal(err)
		}
		again := newMeteredLedger(t, newStore)
		if err := again.Restore(bytes.NewReader(records.Bytes())); err != nil {
			t.Fatalf("seed %d: restore records: %v", seed, err)
		}
		DriveGen(t, gen, seed, again, m, 300, 0)
		CompareWithModel(t, again, m)
	}
}

// newMeteredLedger is a Ledger over a new store whose Config.Meter is
// MeterTestHook.
func newMeteredLedger(t testing.TB, newStore NewStore) *fsm.Ledger {
	t.Helper()
	led, err := fsm.New(fsm.Config{Store: newStore(t), Meter: MeterTestHook})
	if err != nil {
		t.Fatal(err)
	}
	return led
}

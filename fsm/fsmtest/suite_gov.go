package fsmtest

import (
	"bytes"
	"testing"
)

// RunGovernanceAgainstModel drives streams with the governance extension
// (extended job specs, held jobs and JobAdmitted, PolicySet and
// PolicyDeleted of several tenants) through the Ledger and the Model,
// compares everything (governance records included), then snapshots and
// restores into a fresh store: same records, same governance digest,
// and the restored ledger goes on like the model.
func RunGovernanceAgainstModel(t *testing.T, newStore NewStore) {
	for _, seed := range Seeds(1) {
		t.Logf("seed %d (reproduce with STRATA_FSM_SEED=%d)", seed, seed)
		led, _ := NewLedger(t, newStore)
		m := NewModel()
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
		var snap bytes.Buffer
		if err := led.Snapshot(&snap); err != nil {
			t.Fatal(err)
		}
		restored, _ := NewLedger(t, newStore)
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
		again, _ := NewLedger(t, newStore)
		if err := again.Restore(bytes.NewReader(records.Bytes())); err != nil {
			t.Fatalf("seed %d: restore records: %v", seed, err)
		}
		DriveGen(t, gen, seed, again, m, 300, 0)
		CompareWithModel(t, again, m)
	}
}

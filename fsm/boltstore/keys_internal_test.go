package boltstore

import (
	"bytes"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// indexKeysBytes is exactly the room appendIndexKeys takes, so a write
// transaction's keys stay in the arena, and the carved keys are those of
// indexKeys.
func TestIndexKeysBytes_IsTheRoomTheKeysTake(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  fsm.JobStatus
		regions []string
	}{
		{"no regions", fsm.JobStatusPending, nil},
		{"one region", fsm.JobStatusRunning, []string{"use1"}},
		{"three regions", fsm.JobStatusCancelled, []string{"use1", "euw1", "apse2-long"}},
	} {
		s := &fsm.JobState{JobID: "use1-1700000000000-gate1-00042", Tenant: "acme", Status: tc.status}
		for _, r := range tc.regions {
			s.Regions = append(s.Regions, fsm.RegionState{Region: r})
		}
		want := indexKeys(nil, s)
		keys, buf := appendIndexKeys(nil, make([]byte, 0, 7), s)
		if len(buf) != indexKeysBytes(s) {
			t.Errorf("%s: keys of %d bytes, indexKeysBytes %d", tc.name, len(buf), indexKeysBytes(s))
		}
		if len(keys) != len(want) {
			t.Fatalf("%s: %d keys, want %d", tc.name, len(keys), len(want))
		}
		for i := range want {
			if !bytes.Equal(keys[i], want[i]) {
				t.Errorf("%s: key %d %q, want %q", tc.name, i, keys[i], want[i])
			}
		}
	}
	if indexKeysBytes(nil) != 0 {
		t.Error("nil state: want 0 bytes")
	}
}

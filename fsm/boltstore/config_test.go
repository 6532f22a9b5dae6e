package boltstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
)

func TestConfig_Validate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  boltstore.Config
		want string // part of the error; "" for none
	}{
		{"defaults", boltstore.Config{Path: "x.db"}, ""},
		{"no path", boltstore.Config{}, "Path is required"},
		{"tail of one", boltstore.Config{Path: "x.db", HistoryTailEntries: 1}, "HistoryTailEntries"},
		{"tail too long", boltstore.Config{Path: "x.db", HistoryTailEntries: boltstore.MaxHistoryTailEntries + 1}, "HistoryTailEntries"},
		{"negative cache", boltstore.Config{Path: "x.db", JobCacheEntries: -1}, "JobCacheEntries"},
		{"negative workflow cache", boltstore.Config{Path: "x.db", WorkflowCacheEntries: -1}, "WorkflowCacheEntries"},
		{"tiny image limit", boltstore.Config{Path: "x.db", MaxImageBytes: 10}, "MaxImageBytes"},
		{"tiny commits", boltstore.Config{Path: "x.db", ReplaceCommitBytes: 1000}, "ReplaceCommitBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestClose_ThenEveryCallIsErrClosed(t *testing.T) {
	st := openStore(t, testConfig(t))
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for name, err := range map[string]error{
		"View":    st.View(func(fsm.ReadTx) error { return nil }),
		"Update":  st.Update(func(fsm.Tx) error { return nil }),
		"Replace": st.Replace(func(tx fsm.Tx) error { return tx.SetAppliedIndex(1) }),
	} {
		if !errors.Is(err, boltstore.ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
}

// A second process (or store) cannot open a file in use: the lock wait
// is bounded.
func TestOpen_FileInUseTimesOut(t *testing.T) {
	cfg := testConfig(t)
	openStore(t, cfg)
	cfg.LockTimeout = 50e6
	if _, err := boltstore.Open(cfg); err == nil {
		t.Fatal("opened a store another store holds")
	}
}

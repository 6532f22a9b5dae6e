package storemetrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/fsm/boltstore"
)

type fixedStats boltstore.GroupStats

func (f fixedStats) GroupStats() boltstore.GroupStats { return boltstore.GroupStats(f) }

// The counters are the store's GroupStats, one series per cause.
func TestCollector_ExportsGroupStats(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(New(fixedStats{Interval: 3, Size: 1, Read: 7, Close: 0, Updates: 42}))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += "/" + l.GetValue()
			}
			got[key] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{
		"strata_ledger_store_commits_total/interval": 3, "strata_ledger_store_commits_total/size": 1,
		"strata_ledger_store_commits_total/read": 7, "strata_ledger_store_commits_total/close": 0,
		"strata_ledger_store_committed_updates_total": 42,
	}
	if len(got) != len(want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

package group

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestBridgeRaftMetrics_RaftApplyShowsUpAsStrataRaft runs a one-node group
// after bridging and checks that raft's own counters and timers reach the
// registry under strata_raft_*.
func TestBridgeRaftMetrics_RaftApplyShowsUpAsStrataRaft(t *testing.T) {
	// The last registry bridged receives raft's metrics.
	if err := BridgeRaftMetrics(prometheus.NewRegistry()); err != nil {
		t.Fatalf("BridgeRaftMetrics: %v", err)
	}
	reg := prometheus.NewRegistry()
	if err := BridgeRaftMetrics(reg); err != nil {
		t.Fatalf("second BridgeRaftMetrics: %v", err)
	}

	g, _ := openSingleGroup(t, filepath.Join(t.TempDir(), "raft"), "127.0.9.7:0")
	t.Cleanup(func() { g.Close() })
	bootstrapAndApplyJob(t, g)

	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	byName := make(map[string]*dto.MetricFamily)
	var names []string
	for _, mf := range families {
		byName[mf.GetName()] = mf
		names = append(names, mf.GetName())
		if !strings.HasPrefix(mf.GetName(), "strata_raft_") {
			t.Errorf("bridged metric %q lacks the strata_raft_ prefix", mf.GetName())
		}
	}
	t.Logf("bridged: %s", strings.Join(names, " "))

	// Apply counts synchronously in the caller; commitTime is measured by
	// the leader loop before the apply future is answered.
	apply := byName["strata_raft_apply"]
	if apply == nil || apply.GetType() != dto.MetricType_COUNTER || apply.GetMetric()[0].GetCounter().GetValue() < 1 {
		t.Errorf("strata_raft_apply = %v, want a counter >= 1", apply)
	}
	commit := byName["strata_raft_commitTime"]
	if commit == nil || commit.GetType() != dto.MetricType_SUMMARY || commit.GetMetric()[0].GetSummary().GetSampleCount() < 1 {
		t.Fatalf("strata_raft_commitTime = %v, want a summary with a sample", commit)
	}
	// Timers are in seconds; a loopback commit takes well under 10 s.
	if sum := commit.GetMetric()[0].GetSummary().GetSampleSum(); sum <= 0 || sum > 10 {
		t.Errorf("strata_raft_commitTime sum = %v, want seconds in (0, 10]", sum)
	}
}

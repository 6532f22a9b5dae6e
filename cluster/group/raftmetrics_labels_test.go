package group

import (
	"testing"
	"time"

	metrics "github.com/armon/go-metrics"
	metricsprom "github.com/armon/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

func TestIsLegacyPeerKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  []string
		want bool
	}{
		{"heartbeat with peer", []string{"strata", "raft", "replication", "heartbeat", "euw1-gate1"}, true},
		{"heartbeat labelled", []string{"strata", "raft", "replication", "heartbeat"}, false},
		{"append rpc with peer", []string{"strata", "raft", "replication", "appendEntries", "rpc", "m2"}, true},
		{"append logs with peer", []string{"strata", "raft", "replication", "appendEntries", "logs", "m2"}, true},
		{"append rpc labelled", []string{"strata", "raft", "replication", "appendEntries", "rpc"}, false},
		{"install snapshot with peer", []string{"strata", "raft", "replication", "installSnapshot", "g3"}, true},
		{"other raft key", []string{"strata", "raft", "commitTime"}, false},
		{"short key", []string{"strata"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := isLegacyPeerKey(tc.key); got != tc.want {
				t.Errorf("isLegacyPeerKey(%v) = %v, want %v", tc.key, got, tc.want)
			}
		})
	}
}

// TestPeerLabelSink_PeerIsALabelNotAName feeds the sink what raft emits for
// one heartbeat and one append (labelled and legacy) and checks what a
// scrape would show.
func TestPeerLabelSink_PeerIsALabelNotAName(t *testing.T) {
	reg := prometheus.NewRegistry()
	prom, err := metricsprom.NewPrometheusSinkFrom(metricsprom.PrometheusOpts{Registerer: reg, Expiration: time.Minute, Name: "test_bridge"})
	if err != nil {
		t.Fatal(err)
	}
	sink := peerLabelSink{next: prom}
	peer := []metrics.Label{{Name: "peer_id", Value: "euw1-gate1"}}
	sink.AddSampleWithLabels([]string{"strata", "raft", "replication", "heartbeat"}, 1, peer)
	sink.AddSample([]string{"strata", "raft", "replication", "heartbeat", "euw1-gate1"}, 1)
	sink.IncrCounterWithLabels([]string{"strata", "raft", "replication", "appendEntries", "logs"}, 3, peer)
	sink.IncrCounter([]string{"strata", "raft", "replication", "appendEntries", "logs", "euw1-gate1"}, 3)
	sink.SetGauge([]string{"strata", "raft", "peers"}, 3)

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{} // name -> peer label of its first series
	for _, mf := range families {
		peerLabel := ""
		for _, lp := range mf.GetMetric()[0].GetLabel() {
			if lp.GetName() == "peer_id" {
				t.Errorf("%s still has raft's peer_id label", mf.GetName())
			}
			if lp.GetName() == raftPeerLabel {
				peerLabel = lp.GetValue()
			}
		}
		got[mf.GetName()] = peerLabel
	}
	want := map[string]string{
		"strata_raft_replication_heartbeat":          "euw1-gate1",
		"strata_raft_replication_appendEntries_logs": "euw1-gate1",
		"strata_raft_peers":                          "",
	}
	if len(got) != len(want) {
		t.Errorf("families = %v, want %v", got, want)
	}
	for name, p := range want {
		if gp, ok := got[name]; !ok || gp != p {
			t.Errorf("%s: peer=%q present=%v, want peer=%q", name, gp, ok, p)
		}
	}
}

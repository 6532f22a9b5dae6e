package group

import (
	metrics "github.com/armon/go-metrics"
)

// raftPeerLabel is the label that names the peer of a replication metric:
// strata_raft_replication_heartbeat{peer="euw1-gate1"}. hashicorp/raft
// calls it peer_id; it is renamed so every Strata metric names a peer the
// same way.
const raftPeerLabel = "peer"

// raftLegacyPeerKeys are the keys under which hashicorp/raft reports a
// peer's replication metrics a second time with the peer id appended to the
// name ("kept for backward compatibility": raft.replication.heartbeat.<id>).
// A metric name per peer is an unbounded family of names, so these are
// dropped; the labelled series raft emits beside them carry the same
// samples. Keys are as the sink sees them, after the service prefix.
var raftLegacyPeerKeys = [][]string{
	{raftMetricsService, "raft", "replication", "heartbeat"},
	{raftMetricsService, "raft", "replication", "installSnapshot"},
	{raftMetricsService, "raft", "replication", "appendEntries", "rpc"},
	{raftMetricsService, "raft", "replication", "appendEntries", "logs"},
}

// peerLabelSink sits between go-metrics and the Prometheus sink: it drops
// raft's per-peer metric names and renames raft's peer_id label to peer.
// Raft is also configured not to emit the legacy names
// (Config.NoLegacyTelemetry); the sink keeps them out whatever raft does.
type peerLabelSink struct {
	next metrics.MetricSink
}

var _ metrics.MetricSink = peerLabelSink{}

// isLegacyPeerKey reports whether key is a legacy key: one of
// raftLegacyPeerKeys with a peer id after it.
func isLegacyPeerKey(key []string) bool {
	for _, base := range raftLegacyPeerKeys {
		if len(key) <= len(base) {
			continue
		}
		match := true
		for i := range base {
			if key[i] != base[i] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// relabel renames peer_id to peer; labels is not modified.
func relabel(labels []metrics.Label) []metrics.Label {
	for i, l := range labels {
		if l.Name != "peer_id" {
			continue
		}
		out := make([]metrics.Label, len(labels))
		copy(out, labels)
		out[i].Name = raftPeerLabel
		return out
	}
	return labels
}

func (s peerLabelSink) SetGauge(key []string, val float32) { s.SetGaugeWithLabels(key, val, nil) }

func (s peerLabelSink) SetGaugeWithLabels(key []string, val float32, labels []metrics.Label) {
	if !isLegacyPeerKey(key) {
		s.next.SetGaugeWithLabels(key, val, relabel(labels))
	}
}

func (s peerLabelSink) EmitKey(key []string, val float32) {
	if !isLegacyPeerKey(key) {
		s.next.EmitKey(key, val)
	}
}

func (s peerLabelSink) IncrCounter(key []string, val float32) { s.IncrCounterWithLabels(key, val, nil) }

func (s peerLabelSink) IncrCounterWithLabels(key []string, val float32, labels []metrics.Label) {
	if !isLegacyPeerKey(key) {
		s.next.IncrCounterWithLabels(key, val, relabel(labels))
	}
}

func (s peerLabelSink) AddSample(key []string, val float32) { s.AddSampleWithLabels(key, val, nil) }

func (s peerLabelSink) AddSampleWithLabels(key []string, val float32, labels []metrics.Label) {
	if !isLegacyPeerKey(key) {
		s.next.AddSampleWithLabels(key, val, relabel(labels))
	}
}

package group

import (
	"fmt"
	"sync"
	"time"

	metrics "github.com/armon/go-metrics"
	metricsprom "github.com/armon/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// raftMetricsService prefixes every bridged key: raft's ["raft", "apply"]
// becomes strata_raft_apply (DESIGN §12).
const raftMetricsService = "strata"

// raftMetricsExpiration drops a bridged series that raft has not updated for
// this long. Raft names some series after peers (replication to a removed
// server), so without expiry they would be exported forever.
const raftMetricsExpiration = time.Minute

// raftMetricsBridge is process-wide state, an exception to "no package
// state": hashicorp/raft reports through the global sink of
// github.com/hashicorp/go-metrics/compat, which (built without the
// hashicorpmetrics tag, as this module is) forwards to the global of
// github.com/armon/go-metrics. There is one such sink per process: the
// last registry bridged receives it.
var raftMetricsBridge struct {
	mu sync.Mutex
}

// BridgeRaftMetrics exports hashicorp/raft's own metrics (and raft-boltdb's,
// which use the same global) to reg as strata_raft_*: counters as counters,
// gauges as gauges, timers as summaries in seconds (the go-metrics timer
// granularity is set to one second, so values are in base units even though
// raft's names carry no _seconds suffix). One exception:
// strata_raft_leader_lastContact, which raft samples itself in milliseconds.
// A peer is a label, never part of a name:
// strata_raft_replication_heartbeat{peer="euw1-gate1"} (peerLabelSink).
//
// Each call registers a sink with reg and makes it the global go-metrics
// sink, so the last registry bridged receives raft's metrics (an agent has
// one node, so one registry; in a test process with many nodes, the newest
// node's). Series appear once raft emits them: a summary exists after its
// first sample, not before.
func BridgeRaftMetrics(reg prometheus.Registerer) error {
	raftMetricsBridge.mu.Lock()
	defer raftMetricsBridge.mu.Unlock()
	return installRaftMetrics(reg)
}

func installRaftMetrics(reg prometheus.Registerer) error {
	if reg == nil {
		return fmt.Errorf("bridge raft metrics: nil registerer")
	}
	sink, err := metricsprom.NewPrometheusSinkFrom(metricsprom.PrometheusOpts{
		Registerer: reg,
		Expiration: raftMetricsExpiration,
		Name:       "strata_raft_metrics_bridge",
	})
	if err != nil {
		return fmt.Errorf("bridge raft metrics: register sink: %w", err)
	}
	conf := metrics.DefaultConfig(raftMetricsService)
	conf.EnableHostname = false
	conf.EnableHostnameLabel = false
	conf.EnableRuntimeMetrics = false
	conf.TimerGranularity = time.Second
	if _, err := metrics.NewGlobal(conf, peerLabelSink{next: sink}); err != nil {
		return fmt.Errorf("bridge raft metrics: install global sink: %w", err)
	}
	return nil
}

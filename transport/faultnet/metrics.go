package faultnet

import "github.com/prometheus/client_golang/prometheus"

// metrics counts the traffic the rules act on.
type metrics struct {
	droppedPackets prometheus.Counter
	cutConns       prometheus.Counter
	refusedDials   prometheus.Counter
	delayedWrites  prometheus.Counter
}

// newMetrics builds the counters and registers them with reg, if not nil.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		droppedPackets: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_transport_faults_dropped_packets_total",
			Help: "Datagrams dropped by a partition rule or because the delayed-packet bound was reached.",
		}),
		cutConns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_transport_faults_cut_connections_total",
			Help: "Connections closed or refused because their peer is partitioned.",
		}),
		refusedDials: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_transport_faults_refused_dials_total",
			Help: "Dials to a partitioned peer, failed at their deadline.",
		}),
		delayedWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_transport_faults_delayed_writes_total",
			Help: "Stream writes and datagrams held back by a delay rule or the WAN latency.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.droppedPackets, m.cutConns, m.refusedDials, m.delayedWrites} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

package cluster

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/group"
)

// Node-level gauges read at scrape time: the HLC's offset, this node's view
// of its Raft group, and the free space of its data directory. They exist
// so that deploy/prometheus's alerts (no leader, leader flapping, clock
// skew, disk near full) and deploy/grafana's dashboard have a metric to
// read; hashicorp/raft's own metrics (bridged as strata_raft_*) say
// nothing about who leads or in which term.

// registerClockMetrics exports the HLC's offset from the physical clock
// (hlc stays pure: the gauge reads it at scrape time).
func (n *Node) registerClockMetrics() {
	n.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strata_hlc_physical_offset_seconds",
		Help: "How far the HLC's wall time is ahead of this node's physical clock (0 when not ahead)."},
		func() float64 { return n.clock.PhysicalOffset().Seconds() }))
}

// registerNodeMetrics exports the Raft group's state and the data
// directory's space. Call it once n.raft is open.
func (n *Node) registerNodeMetrics() {
	labels := prometheus.Labels{"group": n.role.group}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, f)
	}
	n.reg.MustRegister(
		gauge("strata_raft_is_leader", "1 if this node leads its Raft group, else 0.", func() float64 {
			return boolGauge(n.raft.IsLeader())
		}),
		gauge("strata_raft_has_leader", "1 if this node knows a leader of its Raft group, else 0.", func() float64 {
			return boolGauge(n.raft.Leader().ID != "")
		}),
		gauge("strata_raft_term", "This node's current Raft term.", func() float64 {
			return float64(n.raft.Raft.CurrentTerm())
		}),
		gauge("strata_raft_commit_index", "The latest Raft index this node knows committed.", func() float64 {
			return float64(n.raft.Raft.CommitIndex())
		}),
		gauge("strata_raft_applied_index", "The latest Raft index applied to this node's ledger.", func() float64 {
			return float64(n.raft.Raft.AppliedIndex())
		}),
		gauge("strata_raft_last_contact_seconds", "Time since this node last heard from its leader: 0 on the leader, -1 if never.", func() float64 {
			lc := n.raft.LastContact()
			if lc == group.Never {
				return -1
			}
			return lc.Seconds()
		}),
	)
	dir := n.cfg.DataDir
	disk := func(name, help string, pick func(total, avail uint64) uint64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			total, avail, ok := diskSpace(dir)
			if !ok {
				return 0
			}
			return float64(pick(total, avail))
		})
	}
	n.reg.MustRegister(
		disk("strata_data_dir_size_bytes", "Size of the file system holding the node's data directory.",
			func(total, _ uint64) uint64 { return total }),
		disk("strata_data_dir_available_bytes", "Space available to the node on the file system of its data directory.",
			func(_, avail uint64) uint64 { return avail }),
	)
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

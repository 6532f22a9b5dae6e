package govern

// Maintenance mode (issue 18 §2) is kept as two records of a region's
// ledger: the region's own (key the region, set by an operator of the
// region) and the cluster's (key ClusterMaintenanceKey, copied there by
// the global leader from the global ledger). Neither overrides the other:
// the region is in maintenance while either says so, so switching the
// cluster's mode off leaves a region an operator put in maintenance by
// itself where it was, and switching a region's own mode off does not
// undo the cluster's.

// MaintenanceMode is what a region does under its maintenance records.
type MaintenanceMode struct {
	// On: the region grants no lease.
	On bool
	// Drain: the region also takes running workflows back from their
	// workers (they wait DISPATCHED, their recorded progress kept).
	Drain bool
	// Region and Cluster say which record puts it in maintenance (both
	// may).
	Region, Cluster bool
}

// EffectiveMaintenance is the mode of a region whose own record is own
// and whose copy of the cluster's is cluster (nil: no record). A record
// drains only while it is on, and the region drains if either on record
// does.
func EffectiveMaintenance(own, cluster *MaintenanceRecord) MaintenanceMode {
	var m MaintenanceMode
	if own != nil && own.On {
		m.On, m.Region, m.Drain = true, true, own.Drain
	}
	if cluster != nil && cluster.On {
		m.On, m.Cluster, m.Drain = true, true, m.Drain || cluster.Drain
	}
	return m
}

// Sources names the records that put a region in maintenance:
// "region", "cluster", both, or none.
func (m MaintenanceMode) Sources() []string {
	var out []string
	if m.Region {
		out = append(out, "region")
	}
	if m.Cluster {
		out = append(out, "cluster")
	}
	return out
}

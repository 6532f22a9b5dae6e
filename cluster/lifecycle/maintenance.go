package lifecycle

import (
	"github.com/strata-ledger/strata/cluster/govern"
	"github.com/strata-ledger/strata/fsm"
)

// readMaintenance is region's maintenance mode in the view tx: its own
// record and its copy of the cluster's (govern.EffectiveMaintenance). A
// record the rules cannot read counts as no record.
func readMaintenance(tx fsm.ReadTx, region string) (govern.MaintenanceMode, error) {
	var recs [2]*govern.MaintenanceRecord
	for i, key := range []string{region, govern.ClusterMaintenanceKey} {
		p, err := tx.Policy(govern.KindMaintenance, key)
		if err != nil {
			return govern.MaintenanceMode{}, err
		}
		if p == nil {
			continue
		}
		if r, err := govern.DecodeMaintenance(p.Value); err == nil {
			recs[i] = &r
		}
	}
	return govern.EffectiveMaintenance(recs[0], recs[1]), nil
}

// drainVisits are the jobs a pass must visit for the region's maintenance:
// every active job when the mode changed (a drain starts, or leasing
// resumes), and while the region drains, every active job with a lease
// still to take back (a pass drains at most plan.MaxDrainPerPass, so the
// jobs it did not reach are visited again by the next).
func (rr *regionReconciler) drainVisits() []string {
	switch {
	case rr.gov.moved:
		return mapKeys(rr.active)
	case !rr.gov.mode.Drain:
		return nil
	}
	var ids []string
	for id, wfs := range rr.active {
		for _, w := range wfs {
			if w.Status == fsm.WorkflowStatusLeased {
				ids = append(ids, id)
				break
			}
		}
	}
	return ids
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

package lifecycle

import (
	"sort"

	"github.com/strata-ledger/strata/cluster/lifecycle/plan"
	"github.com/strata-ledger/strata/cluster/quota"
	"github.com/strata-ledger/strata/cluster/throttle"
	"github.com/strata-ledger/strata/fsm"
)

// maxAdmitsPerPass bounds the JobAdmitted events one pass proposes.
const maxAdmitsPerPass = 1_000

// admit plans the admissions of queued jobs (issue 18 §1) for tenants
// (those the pass saw change, or every live tenant on a full pass): per
// tenant, the best-ranked queued jobs its quota has room for
// (quota.Admissions), skipping paused ones. The ledger checks each
// admission again (quota.Hook), so a stale plan admits nothing too many.
// Only tenants with a queued job seen by a visit (g.queued) are looked
// at, so tenants that never queue cost no scan of their PENDING jobs.
func (g *globalReconciler) admit(tx fsm.ReadTx, tenants map[string]bool, nowMs int64, w *globalWork) error {
	names := make([]string, 0, len(tenants))
	for t := range tenants {
		names = append(names, t)
	}
	sort.Strings(names)
	skip := func(s *fsm.JobState) (bool, error) { return throttle.Paused(tx, s.Tenant, s.Spec.Type) }
	n := 0
	for _, tenant := range names {
		if !g.queued[tenant] {
			continue // no queued job seen: nothing to admit, no scan
		}
		adm, queued, err := quota.AdmissionsOf(tx, tenant, nowMs, skip)
		if err != nil {
			return err
		}
		if queued == 0 {
			delete(g.queued, tenant)
		}
		for _, s := range adm {
			if n == maxAdmitsPerPass {
				return nil
			}
			w.propose = append(w.propose, plan.Admit(s))
			w.after = maxTS(w.after, s.Last.HLC)
			g.pending[s.JobID] = true // visit it again next pass (its dispatch)
			n++
		}
	}
	return nil
}

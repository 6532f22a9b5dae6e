package httpapi

import (
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// traceLeases gives each lease the trace context its job was submitted
// under (fsm.JobSpec.Traceparent), so the worker's execution span joins
// the job's trace. One read view for the list; a job the region does not
// hold (yet), or a failed read, leaves the lease untraced: a trace is
// never a reason to refuse work.
func (sv *Server) traceLeases(leases []api.Lease) {
	if len(leases) == 0 {
		return
	}
	_ = sv.cfg.Ledger.View(func(tx fsm.ReadTx) error {
		seen := make(map[string]string, len(leases))
		for i := range leases {
			id := leases[i].JobID
			tp, ok := seen[id]
			if !ok {
				if js, err := tx.Job(id); err == nil && js != nil {
					tp = js.Spec.Traceparent
				}
				seen[id] = tp
			}
			leases[i].Traceparent = tp
		}
		return nil
	})
}

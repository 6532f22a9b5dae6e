package cluster

import (
	"github.com/strata-ledger/strata/cluster/quota"
	"github.com/strata-ledger/strata/fsm"
)

// admissionHook is the global ledger's admission rule (issue 18): a
// queued job is admitted only while its tenant is under its quota
// (quota.Hook). Every gate's ledger must run it — it decides which
// JobAdmitted events are stored — so a gate replaying its log (recover)
// runs it too; managers' regional ledgers hold no jobs to admit.
func admissionHook(gate bool) func(fsm.ReadTx, *fsm.JobState) error {
	if !gate {
		return nil
	}
	return quota.Hook
}

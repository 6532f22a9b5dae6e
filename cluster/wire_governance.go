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

// meterHook is the global ledger's rate rule (issue 18 §1): every new job
// of a tenant with a max_per_hour takes a token of its replicated meter
// (quota.MeterHook), exactly, whichever gate took the submit. Like
// admissionHook, every gate's ledger must run it, recover included (it
// decides the meters and which jobs are held); regional ledgers never do.
func meterHook(gate bool) fsm.MeterHook {
	if !gate {
		return nil
	}
	return quota.MeterHook
}

package cluster

import (
	"net/http"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// handleJobWorkflows lists a job's workflows in this node's region
// (GET /v1/jobs/{id}/workflows): status, lease, counters, reschedules.
// Workflows live in the regional ledgers, so a manager answers from its
// own; a gate forwards the call to a manager of its region. Like a job
// read, another tenant's job is "not found".
func (n *Node) handleJobWorkflows(w http.ResponseWriter, r *http.Request) {
	p, ok := n.principal(w, r)
	if !ok {
		return
	}
	id, ok := jobIDParam(w, r)
	if !ok {
		return
	}
	if n.cfg.Role == RoleGate {
		n.forwardToRole(w, r, nil, RoleManager)
		return
	}
	if _, ok := n.readJob(w, r, p, id); !ok {
		return
	}
	out := api.WorkflowList{Region: n.cfg.Region, Workflows: []fsm.WorkflowState{}}
	err := n.store.View(func(tx fsm.ReadTx) error {
		return tx.Workflows(id+"/"+n.cfg.Region+"/", func(wf *fsm.WorkflowState) error {
			out.Workflows = append(out.Workflows, *wf)
			return nil
		})
	})
	if err != nil {
		writeError(w, readError(err))
		return
	}
	n.setReadHeaders(w)
	writeJSON(w, http.StatusOK, out)
}

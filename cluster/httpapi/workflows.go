package httpapi

import (
	"net/http"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// handleJobWorkflows lists a job's workflows in this node's region
// (GET /v1/jobs/{id}/workflows): status, lease, counters, reschedules.
// Workflows live in the regional ledgers, so a manager answers from its
// own; a gate forwards the call to a manager of its region. Like a job
// read, another tenant's job is "not found".
func (sv *Server) handleJobWorkflows(w http.ResponseWriter, r *http.Request, c *call) {
	id, ok := jobIDParam(w, r)
	if !ok {
		return
	}
	if _, ok := sv.readJob(w, c.p, id); !ok {
		return
	}
	out := api.WorkflowList{Region: sv.cfg.Region, Workflows: []fsm.WorkflowState{}}
	err := sv.cfg.Store.View(func(tx fsm.ReadTx) error {
		return tx.Workflows(id+"/"+sv.cfg.Region+"/", func(wf *fsm.WorkflowState) error {
			out.Workflows = append(out.Workflows, *wf)
			return nil
		})
	})
	if err != nil {
		httpx.WriteError(w, readError(err))
		return
	}
	sv.setReadHeaders(w)
	httpx.WriteJSON(w, http.StatusOK, out)
}

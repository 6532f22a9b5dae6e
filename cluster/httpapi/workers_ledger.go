package httpapi

import (
	"fmt"

	"github.com/strata-ledger/strata/fsm"
)

// Point reads of the regional ledger's workers and workflows for the
// worker API. fsm.Ledger offers lists only, so these read the node's
// store directly, in one read transaction each: the same consistent
// state the Ledger's own reads see.

// ledgerWorker returns the worker's state, nil if it was never registered.
func (sv *Server) ledgerWorker(id string) (*fsm.WorkerState, error) {
	var ws *fsm.WorkerState
	err := sv.cfg.Store.View(func(tx fsm.ReadTx) error {
		var err error
		ws, err = tx.Worker(id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read worker %s: %w", id, err)
	}
	return ws, nil
}

// ledgerWorkflows returns the states of the workflows among ids that the
// ledger holds, by id, from one consistent state.
func (sv *Server) ledgerWorkflows(ids []string) (map[string]*fsm.WorkflowState, error) {
	out := make(map[string]*fsm.WorkflowState, len(ids))
	err := sv.cfg.Store.View(func(tx fsm.ReadTx) error {
		for _, id := range ids {
			if _, seen := out[id]; seen {
				continue
			}
			wf, err := tx.Workflow(id)
			if err != nil {
				return err
			}
			if wf != nil {
				out[id] = wf
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read workflows: %w", err)
	}
	return out, nil
}

package cluster

import (
	"crypto/sha256"
	"errors"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/fsm"
)

// errNotApplied stops batchApplied's read at the first event not stored.
var errNotApplied = errors.New("not applied")

// batchApplied is the pipeline's Applied (commit.PipelineConfig): whether
// every event of a NodeWAL batch is stored in this node's ledger, the same
// event by the ledger's duplicate rule. A follower applies only committed
// entries, so they reached the tier; the answer is what a retry would get
// (duplicate outcomes), with the applied index of the same read view,
// which is at or above the entry that carried them. Asked only before a
// retry: one read transaction, one lookup per event.
func (n *Node) batchApplied(batch []byte) (group.Proposal, bool) {
	events, err := fsm.DecodeBatch(batch)
	if err != nil || len(events) == 0 {
		return group.Proposal{}, false
	}
	out := group.Proposal{Results: make([]fsm.Result, len(events))}
	var body []byte
	err = n.ledger.View(func(tx fsm.ReadTx) error {
		for i := range events {
			e := &events[i]
			prev, err := tx.Event(e.Tenant, e.ID)
			if err != nil {
				return err
			}
			if prev == nil {
				return errNotApplied
			}
			if body, err = fsm.AppendBody(body[:0], e.Body); err != nil {
				return err
			}
			if !fsm.SameEvent(&prev.Event, prev.BodyHash, e, fsm.Hash(sha256.Sum256(body))) {
				return errNotApplied // a conflict: the retry gets the ledger's answer
			}
			out.Results[i] = fsm.Result{Outcome: fsm.OutcomeDuplicate, Seq: prev.Seq, Type: e.Type, JobID: e.JobID}
		}
		out.Index, err = tx.AppliedIndex()
		return err
	})
	return out, err == nil && out.Index > 0
}

package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/strata-ledger/strata/bundle"
	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// GET /v1/chain/checkpoints?tenant=T[&after=N] and GET
// /v1/chain/proof?tenant=T&(seq=S|event=ID) (issue 15, seed 000): the
// checkpoints of a tenant's chain, one per complete batch of
// bundle.CheckpointEvents entries, derived from the chain (every gate
// derives the same), and the inclusion proof of one entry (by sequence
// number or event id) in its batch's checkpoint: the entry's content and
// previous link, so a verifier recomputes its link, the Merkle path, and
// the checkpoint signed by the gates' key when they have one.

// maxCheckpointsPerPage bounds one page: the entries it reads are at
// most MaxVerifyEvents.
const maxCheckpointsPerPage = MaxVerifyEvents / bundle.CheckpointEvents

func (sv *Server) chainTenant(w http.ResponseWriter, r *http.Request, c *call) (string, bool) {
	tenant := r.URL.Query().Get("tenant")
	if !fsm.IsName(tenant) {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: "tenant is required", Details: map[string]any{"field": "tenant"}})
		return "", false
	}
	if !c.p.Allows(auth.ScopeJobsRead, tenant) {
		httpx.WriteError(w, forbidden(c.p, auth.ScopeJobsRead, tenant))
		return "", false
	}
	return tenant, true
}

func (sv *Server) handleCheckpoints(w http.ResponseWriter, r *http.Request, c *call) {
	tenant, ok := sv.chainTenant(w, r, c)
	if !ok {
		return
	}
	var after uint64 // batches start after this many whole batches' entries
	if s := r.URL.Query().Get("after"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil || v%bundle.CheckpointEvents != 0 {
			httpx.WriteError(w, httpx.BadRequest("after %q must be a sequence number that ends a batch (a multiple of %d)", s, bundle.CheckpointEvents))
			return
		}
		after = v
	}
	out := api.CheckpointList{Checkpoints: []bundle.SignedCheckpoint{}}
	err := sv.cfg.Store.View(func(tx fsm.ReadTx) error {
		head, _, err := tx.ChainHead(tenant)
		if err != nil {
			return err
		}
		for first := after + 1; first+bundle.CheckpointEvents-1 <= head.Seq; first += bundle.CheckpointEvents {
			if len(out.Checkpoints) == maxCheckpointsPerPage {
				out.Next = first - 1
				break
			}
			cp, _, err := batchCheckpoint(tx, tenant, first, first+bundle.CheckpointEvents-1, nil)
			if err != nil {
				return err
			}
			out.Checkpoints = append(out.Checkpoints, bundle.SignCheckpoint(cp, sv.cfg.SigningKey))
		}
		// The open batch, checkpointed as it stands, on the last page.
		open := head.Seq / bundle.CheckpointEvents * bundle.CheckpointEvents
		if out.Next == 0 && head.Seq > open && open >= after {
			cp, _, err := batchCheckpoint(tx, tenant, open+1, head.Seq, nil)
			if err != nil {
				return err
			}
			sc := bundle.SignCheckpoint(cp, sv.cfg.SigningKey)
			out.Open = &sc
		}
		return nil
	})
	if err != nil {
		httpx.WriteError(w, readError(err))
		return
	}
	sv.setReadHeaders(w)
	httpx.WriteJSON(w, http.StatusOK, out)
}

func (sv *Server) handleProof(w http.ResponseWriter, r *http.Request, c *call) {
	tenant, ok := sv.chainTenant(w, r, c)
	if !ok {
		return
	}
	q := r.URL.Query()
	var seq uint64
	var id fsm.EventID
	var err error
	switch {
	case q.Has("seq") == q.Has("event"):
		err = errors.New("give one of seq (an entry's sequence number, from 1) and event (an event id)")
	case q.Has("event"):
		if id, err = fsm.ParseEventID(q.Get("event")); err != nil {
			err = fmt.Errorf("event: %w", err)
		}
	default:
		if seq, err = strconv.ParseUint(q.Get("seq"), 10, 64); err != nil || seq == 0 {
			err = errors.New("seq must be an entry's sequence number (from 1)")
		}
	}
	if err != nil {
		httpx.WriteError(w, httpx.BadRequest("%v", err))
		return
	}
	var proof bundle.Proof
	err = sv.cfg.Store.View(func(tx fsm.ReadTx) error {
		if seq == 0 {
			se, err := tx.Event(tenant, id)
			if err != nil {
				return err
			}
			if se == nil {
				return &httpx.APIError{Status: http.StatusNotFound, Code: httpx.CodeNotFound,
					Message: fmt.Sprintf("event %s is not in %s's chain", id, tenant)}
			}
			seq = se.Seq
		}
		head, _, err := tx.ChainHead(tenant)
		if err != nil {
			return err
		}
		if seq > head.Seq {
			return &httpx.APIError{Status: http.StatusNotFound, Code: httpx.CodeNotFound,
				Message: fmt.Sprintf("entry %d is not in %s's chain (it holds %d)", seq, tenant, head.Seq)}
		}
		// An entry of the open batch is proved against that batch's
		// checkpoint as it stands (its last_seq says how far).
		first := (seq-1)/bundle.CheckpointEvents*bundle.CheckpointEvents + 1
		last := min(first+bundle.CheckpointEvents-1, head.Seq)
		var ev *bundle.ProofEvent
		cp, links, err := batchCheckpoint(tx, tenant, first, last, func(se *fsm.StoredEvent, prev fsm.Hash) error {
			if se.Seq != seq {
				return nil
			}
			var err error
			ev, err = bundle.NewProofEvent(se, prev)
			return err
		})
		if err != nil {
			return err
		}
		i := int(seq - first)
		proof = bundle.Proof{Seq: seq, Link: links[i], Path: bundle.InclusionPath(links, i),
			Batch: bundle.SignCheckpoint(cp, sv.cfg.SigningKey), Event: ev}
		return nil
	})
	var ae *httpx.APIError
	switch {
	case errors.As(err, &ae):
		httpx.WriteError(w, ae)
		return
	case err != nil:
		httpx.WriteError(w, readError(err))
		return
	}
	sv.setReadHeaders(w)
	httpx.WriteJSON(w, http.StatusOK, proof)
}

// batchCheckpoint reads entries first..last of tenant's chain (a whole
// batch, or the open batch as far as it goes) and returns their
// checkpoint and links; each (if set) sees every entry with its previous
// link.
func batchCheckpoint(tx fsm.ReadTx, tenant string, first, last uint64, each func(se *fsm.StoredEvent, prev fsm.Hash) error) (bundle.Checkpoint, []fsm.Hash, error) {
	cp := bundle.Checkpoint{Tenant: tenant, FirstSeq: first, LastSeq: last}
	links := make([]fsm.Hash, 0, last-first+1)
	errDone := errors.New("done")
	after := first - 1
	if first > 1 {
		after = first - 2 // read the entry before the batch for its link
	}
	err := tx.ChainEvents(tenant, after, func(se *fsm.StoredEvent) error {
		switch {
		case se.Seq < first:
			cp.PrevLink = se.Link
		case se.Seq <= cp.LastSeq:
			if each != nil {
				prev := cp.PrevLink
				if len(links) > 0 {
					prev = links[len(links)-1]
				}
				if err := each(se, prev); err != nil {
					return err
				}
			}
			links = append(links, se.Link)
		default:
			return errDone
		}
		if se.Seq == cp.LastSeq {
			return errDone
		}
		return nil
	})
	if err != nil && !errors.Is(err, errDone) {
		return cp, nil, err
	}
	if uint64(len(links)) != last-first+1 {
		return cp, nil, fmt.Errorf("chain of %s: batch %d..%d holds %d entries", tenant, first, cp.LastSeq, len(links))
	}
	cp.LastLink = links[len(links)-1]
	cp.Root = bundle.MerkleRoot(links)
	return cp, links, nil
}

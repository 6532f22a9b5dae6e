package regionsync

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/strata-ledger/strata/antientropy"
	"github.com/strata-ledger/strata/antientropy/ledgertree"
	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/lifecycle/plan"
	"github.com/strata-ledger/strata/fsm"
)

// CompareAnswerPath is the gates' internal endpoint: the body is an
// antientropy Request for ?region=, the answer the Page of the gate's
// view of that region.
const CompareAnswerPath = "/internal/v1/antientropy/regional"

// Answerer is a gate's side of the comparison.
type Answerer struct {
	Regions      *ledgertree.Regions
	View         func(func(fsm.ReadTx) error) error // the global ledger's
	ClusterToken string
	// Deliver proposes a batch to a region's group (RedeliverHandler).
	Deliver func(ctx context.Context, region string, batch []byte) error
}

// Handler answers CompareAnswerPath.
func (a *Answerer) Handler(w http.ResponseWriter, r *http.Request) {
	if !auth.PeerTokenOK(r, a.ClusterToken) {
		http.Error(w, "internal call without the cluster token", http.StatusUnauthorized)
		return
	}
	region := r.URL.Query().Get("region")
	if !fsm.IsRegion(region) {
		http.Error(w, "region: want a region code", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, antientropy.MaxMessageBytes))
	if err != nil {
		http.Error(w, "request over the message limit", http.StatusRequestEntityTooLarge)
		return
	}
	var req antientropy.Request
	if err := req.UnmarshalBinary(body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	t, err := a.Regions.Region(region)
	if err == nil {
		err = t.Sync(a.View)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	var page antientropy.Page
	err = t.Read(func(tree *antientropy.Tree) error {
		var err error
		page, err = antientropy.Answer(tree, req)
		return err
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := page.MarshalBinary()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(out)
}

// RedeliverPath is the gates' internal endpoint that delivers again, to
// ?region=, the jobs the body names ({"jobs": [...]}, at most
// MaxRepairsPerRound) that the gate's ledger assigns to it: what a region
// lacks of a job is what the gates deliver to it (its JobCreated, and the
// stop decision in force), through the normal cross-group delivery.
const RedeliverPath = "/internal/v1/antientropy/redeliver"

// redeliverRequest is the body of RedeliverPath.
type redeliverRequest struct {
	Jobs []string `json:"jobs"`
}

// redeliverAnswer is its answer.
type redeliverAnswer struct {
	Delivered int `json:"delivered"`
}

// RedeliverHandler answers RedeliverPath; Deliver proposes a batch to a
// region's group.
func (a *Answerer) RedeliverHandler(w http.ResponseWriter, r *http.Request) {
	if !auth.PeerTokenOK(r, a.ClusterToken) {
		http.Error(w, "internal call without the cluster token", http.StatusUnauthorized)
		return
	}
	region := r.URL.Query().Get("region")
	if !fsm.IsRegion(region) || a.Deliver == nil {
		http.Error(w, "region: want a region code", http.StatusBadRequest)
		return
	}
	var req redeliverRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRedeliverBody))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil || len(req.Jobs) > MaxRepairsPerRound {
		http.Error(w, "want {\"jobs\": [...]} of at most MaxRepairsPerRound ids", http.StatusBadRequest)
		return
	}
	var events []fsm.Event
	err = a.View(func(tx fsm.ReadTx) error {
		for _, id := range req.Jobs {
			s, err := tx.Job(id)
			if err != nil {
				return err
			}
			if s == nil {
				continue
			}
			if _, assigned, _ := fsm.RegionDigest(s, region); !assigned {
				continue
			}
			evs, err := plan.Delivery(tx, s, plan.StopsWorkflows(s.Decision.Type))
			if err != nil {
				return err
			}
			events = append(events, evs...)
		}
		return nil
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	for start := 0; start < len(events); start += repairBatchEvents {
		enc, err := fsm.EncodeBatch(events[start:min(start+repairBatchEvents, len(events))])
		if err == nil {
			err = a.Deliver(r.Context(), region, enc)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(redeliverAnswer{Delivered: len(events)})
}

// maxRedeliverBody bounds RedeliverPath's body.
const maxRedeliverBody = MaxRepairsPerRound * (fsm.MaxJobIDBytes + 4)

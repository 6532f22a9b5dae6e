package regionsync

import (
	"io"
	"net/http"

	"github.com/strata-ledger/strata/antientropy"
	"github.com/strata-ledger/strata/antientropy/ledgertree"
	"github.com/strata-ledger/strata/cluster/auth"
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

package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-ledger/strata/bundle"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/transport/api"
)

// A tenant's chain of more than one batch has a checkpoint per complete
// batch, and every entry of it an inclusion proof that verifies offline
// against the checkpoint alone; an entry of the open batch is proved
// against that batch's checkpoint as it stands (GET /v1/chain/checkpoints
// serves it as "open"). (Issue 15, seed 000; subnet 255.)
func TestChainCheckpointsAndProofs(t *testing.T) {
	pub, priv, err := bundle.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := bundle.MarshalPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "signing.key")
	if err := os.WriteFile(keyFile, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	c := startTestCluster(t, 255, func(cfg *NodeConfig) { cfg.SigningKey = keyFile })
	events := fsmtest.JobsCreated(0, bundle.CheckpointEvents+10, "acme", "use1")
	for start := 0; start < len(events); start += 500 {
		body, err := json.Marshal(map[string]any{"events": events[start:min(start+500, len(events))]})
		if err != nil {
			t.Fatal(err)
		}
		if r := c.call("g1", "POST", "/v1/events:batch", testAdminToken, body); r.status != http.StatusOK {
			t.Fatalf("batch: %d %.300s", r.status, r.body)
		}
	}
	var list api.CheckpointList
	r := c.call("g2", "GET", "/v1/chain/checkpoints?tenant=acme", testAcmeToken, nil)
	r.decode(t, &list)
	if r.status != http.StatusOK || len(list.Checkpoints) != 1 || list.Checkpoints[0].FirstSeq != 1 || list.Checkpoints[0].LastSeq != bundle.CheckpointEvents {
		t.Fatalf("checkpoints: %d %.300s", r.status, r.body)
	}
	if err := bundle.VerifyCheckpoint(list.Checkpoints[0], pub); err != nil {
		t.Fatalf("the checkpoint is not signed by the cluster's key: %v", err)
	}
	cp := list.Checkpoints[0].Checkpoint
	for _, seq := range []uint64{1, 500, bundle.CheckpointEvents} {
		var p bundle.Proof
		r := c.call("g3", "GET", fmt.Sprintf("/v1/chain/proof?tenant=acme&seq=%d", seq), testAcmeToken, nil)
		r.decode(t, &p)
		if r.status != http.StatusOK || p.Batch.Checkpoint != cp || p.Event == nil {
			t.Fatalf("proof of %d: %d %.300s", seq, r.status, r.body)
		}
		if err := bundle.VerifyProofSigned(p, pub); err != nil {
			t.Fatalf("proof of %d: %v", seq, err)
		}
		// The same proof by the entry's event id.
		var byID bundle.Proof
		r = c.call("g2", "GET", "/v1/chain/proof?tenant=acme&event="+p.Event.ID.String(), testAcmeToken, nil)
		if r.decode(t, &byID); r.status != http.StatusOK || byID.Seq != seq || byID.Link != p.Link {
			t.Fatalf("proof of event %s: %d %.300s", p.Event.ID, r.status, r.body)
		}
		// The proven link is the stored entry's.
		var stored fsm.Hash
		_ = c.node("g1").ledger.View(func(tx fsm.ReadTx) error {
			return tx.ChainEvents("acme", seq-1, func(se *fsm.StoredEvent) error {
				if se.Seq == seq {
					stored = se.Link
				}
				return nil
			})
		})
		if stored != p.Link {
			t.Fatalf("proof of %d names another link than the stored one", seq)
		}
	}
	head := uint64(bundle.CheckpointEvents + 10)
	if list.Open == nil || list.Open.FirstSeq != bundle.CheckpointEvents+1 || list.Open.LastSeq != head {
		t.Fatalf("the open batch's checkpoint: %+v", list.Open)
	}
	if err := bundle.VerifyCheckpoint(*list.Open, pub); err != nil {
		t.Fatalf("the open batch's checkpoint is not signed: %v", err)
	}
	var open bundle.Proof
	r = c.call("g1", "GET", fmt.Sprintf("/v1/chain/proof?tenant=acme&seq=%d", bundle.CheckpointEvents+5), testAcmeToken, nil)
	if r.decode(t, &open); r.status != http.StatusOK || open.Batch.Checkpoint != list.Open.Checkpoint {
		t.Fatalf("proof in the open batch: %d %.300s", r.status, r.body)
	}
	if err := bundle.VerifyProofSigned(open, pub); err != nil {
		t.Fatalf("proof in the open batch: %v", err)
	}
	if r := c.call("g1", "GET", fmt.Sprintf("/v1/chain/proof?tenant=acme&seq=%d", head+1), testAcmeToken, nil); r.status != http.StatusNotFound {
		t.Fatalf("proof past the chain's head: %d %s", r.status, r.body)
	}
	for query, want := range map[string]int{
		"seq=1&event=" + fsm.EventID{1}.String(): http.StatusBadRequest, // both
		"":                                       http.StatusBadRequest, // neither
		"event=nothex":                           http.StatusBadRequest,
		"event=" + fsm.EventID{1}.String():       http.StatusNotFound, // not in the chain
	} {
		if r := c.call("g1", "GET", "/v1/chain/proof?tenant=acme&"+query, testAcmeToken, nil); r.status != want {
			t.Fatalf("proof?%s: %d %s", query, r.status, r.body)
		}
	}
	// Exports are signed with the same key.
	exp := c.call("g1", "GET", "/v1/export?tenant=acme", testAcmeToken, nil)
	if rep, err := bundle.Verify(bytes.NewReader(exp.body), bundle.VerifyConfig{PublicKey: pub}); err != nil || !rep.Trusted {
		t.Fatalf("the export is not signed by the cluster's key: %+v %v", rep, err)
	}
	if r := c.call("g1", "GET", "/v1/chain/checkpoints?tenant=acme", testGlobexToken, nil); r.status != http.StatusForbidden {
		t.Fatalf("another tenant's checkpoints: %d", r.status)
	}
}

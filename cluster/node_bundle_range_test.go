package cluster

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/bundle"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/transport/api"
)

// An export holds the tenant's chain checkpoints, the ones GET
// /v1/chain/checkpoints serves, and they verify with the cluster's key;
// an export of an HLC range holds the contiguous sub-chain of the range
// (starting mid-chain, the checkpoints of the batches wholly inside it),
// its NDJSON only the events in the range; bad ranges are refused with
// 400. (Issue 15; subnet 105.)
func TestBundle_ExportCheckpointsAndHLCRange(t *testing.T) {
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
	c := startTestCluster(t, 105, func(cfg *NodeConfig) { cfg.SigningKey = keyFile })
	events := fsmtest.JobsCreated(0, 2*bundle.CheckpointEvents+300, "acme", "use1")
	for i := range events { // distinct HLCs, every 7th one late (so HLC order is not chain order)
		events[i].HLC = fsmtest.TS(1_700_000_000_000+int64(i)*10, 0, 1)
		if i%7 == 6 {
			events[i].HLC.WallMs -= 25
		}
	}
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
	r := c.call("g1", "GET", "/v1/chain/checkpoints?tenant=acme", testAcmeToken, nil)
	r.decode(t, &list)
	if r.status != http.StatusOK || len(list.Checkpoints) != 2 {
		t.Fatalf("checkpoints: %d %.300s", r.status, r.body)
	}
	exp := c.call("g1", "GET", "/v1/export?tenant=acme", testAcmeToken, nil)
	var chain []fsm.StoredEvent
	rep, err := bundle.Verify(bytes.NewReader(exp.body), bundle.VerifyConfig{PublicKey: pub, OnEntry: func(e *bundle.Entry) error {
		chain = append(chain, *e.Stored)
		return nil
	}})
	if err != nil || rep.Checkpoints != 2 || rep.CheckpointsSigned != 2 || len(chain) != len(events) {
		t.Fatalf("export: %+v %v", rep, err)
	}
	for _, cp := range list.Checkpoints {
		b, _ := json.Marshal(cp)
		if !bytes.Contains(exp.body, b) {
			t.Fatalf("the export does not hold the checkpoint %d..%d the API serves", cp.FirstSeq, cp.LastSeq)
		}
	}

	// POST /v1/import?verify_only=true checks the checkpoints: one whose
	// root was changed (its CRC recomputed) is refused, named.
	tampered := bytes.Clone(exp.body)
	i := bytes.Index(tampered, []byte(`{"tenant":"acme","first_seq":1001,`))
	if i < 5 {
		t.Fatal("no second checkpoint in the export")
	}
	n := int(binary.LittleEndian.Uint32(tampered[i-4:]))
	j := i + bytes.Index(tampered[i:], []byte(`"root":"`)) + len(`"root":"`)
	if tampered[j] == '0' {
		tampered[j] = '1'
	} else {
		tampered[j] = '0'
	}
	binary.LittleEndian.PutUint32(tampered[i+n:], crc32.Checksum(tampered[i-5:i+n], crc32.MakeTable(crc32.Castagnoli)))
	vo := c.call("g1", "POST", "/v1/import?verify_only=true", testAdminToken, tampered)
	if vo.status != http.StatusBadRequest || !strings.Contains(string(vo.body), `"part":"checkpoint"`) || !strings.Contains(string(vo.body), `"field":"root"`) {
		t.Fatalf("verify_only of a bundle with a tampered checkpoint: %d %s", vo.status, vo.body)
	}

	var ok api.ImportResponse
	if r := c.call("g1", "POST", "/v1/import?verify_only=true", testAdminToken, exp.body); r.status != http.StatusOK {
		t.Fatalf("verify_only: %d %s", r.status, r.body)
	} else if r.decode(t, &ok); !ok.Verified || ok.Checkpoints != 2 {
		t.Fatalf("verify_only: %s", r.body)
	}

	// A range from entry 700 to entry 2100 (by HLC).
	from, to := chain[699].HLC, chain[2099].HLC
	var first, last uint64
	inRange := 0
	for _, se := range chain {
		if !se.HLC.Less(from) && !to.Less(se.HLC) {
			if first == 0 {
				first = se.Seq
			}
			last = se.Seq
			inRange++
		}
	}
	t.Logf("chain[0] %s chain[699] %s chain[2099] %s last %s; range seqs %d..%d, %d in range", chain[0].HLC, from, to, chain[len(chain)-1].HLC, first, last, inRange)
	q := "/v1/export?tenant=acme&from_hlc=" + url.QueryEscape(from.String()) + "&to_hlc=" + url.QueryEscape(to.String())
	ranged := c.call("g2", "GET", q, testAcmeToken, nil)
	if ranged.status != http.StatusOK {
		t.Fatalf("ranged export: %d %.300s", ranged.status, ranged.body)
	}
	rep, err = bundle.Verify(bytes.NewReader(ranged.body), bundle.VerifyConfig{PublicKey: pub})
	if err != nil || rep.Start.Seq != first-1 || (first > 1 && rep.Start.Link != chain[first-2].Link) || rep.Head.Seq != last ||
		rep.Entries != last-first+1 || rep.Checkpoints != 1 || rep.Manifest.Range == nil || rep.Manifest.Range.From != from {
		t.Fatalf("ranged export: %+v %v (want seqs %d..%d)", rep, err, first, last)
	}
	nd := c.call("g3", "GET", q+"&format=ndjson", testAcmeToken, nil)
	ndrep, err := bundle.VerifyNDJSON(bytes.NewReader(nd.body))
	if nd.status != http.StatusOK || err != nil || ndrep.Lines != uint64(inRange) || ndrep.Manifest.Range == nil {
		t.Fatalf("ranged ndjson: %d %+v %v (want %d lines)", nd.status, ndrep, err, inRange)
	}
	// Before every event: an empty bundle.
	empty := c.call("g1", "GET", "/v1/export?tenant=acme&to_hlc=1", testAcmeToken, nil)
	if rep, err := bundle.Verify(bytes.NewReader(empty.body), bundle.VerifyConfig{}); empty.status != http.StatusOK || err != nil || rep.Entries != 0 {
		t.Fatalf("empty range: %d %+v %v", empty.status, rep, err)
	}
	for _, bad := range []string{"from_hlc=soon", "to_hlc=1:2", "from_hlc=5&to_hlc=4", "from_hlc=-1", fmt.Sprintf("from_hlc=%s&to_hlc=%s", to, from)} {
		r := c.call("g1", "GET", "/v1/export?tenant=acme&"+bad, testAcmeToken, nil)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "hlc") {
			t.Fatalf("%s: %d %s", bad, r.status, r.body)
		}
	}
}

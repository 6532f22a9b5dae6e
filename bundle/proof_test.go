package bundle

import (
	"crypto/ed25519"
	"encoding/json"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// chainProof is the proof of chain[i] (in a complete batch) as a gate
// makes it, checkpoint signed by key.
func chainProof(t *testing.T, chain []*fsm.StoredEvent, i int, key ed25519.PrivateKey) Proof {
	t.Helper()
	first := i / CheckpointEvents * CheckpointEvents
	links := make([]fsm.Hash, CheckpointEvents)
	for j := range links {
		links[j] = chain[first+j].Link
	}
	var prev fsm.Hash
	if i > 0 {
		prev = chain[i-1].Link
	}
	cp := Checkpoint{Tenant: "acme", FirstSeq: chain[first].Seq, LastSeq: chain[first+CheckpointEvents-1].Seq,
		LastLink: links[CheckpointEvents-1], Root: MerkleRoot(links)}
	if first > 0 {
		cp.PrevLink = chain[first-1].Link
	}
	ev, err := NewProofEvent(chain[i], prev)
	if err != nil {
		t.Fatal(err)
	}
	return Proof{Seq: chain[i].Seq, Link: chain[i].Link, Path: InclusionPath(links, i-first), Batch: SignCheckpoint(cp, key), Event: ev}
}

// A proof verifies offline from its JSON alone: the event's content
// gives its link, the path the checkpoint's root, the key the
// checkpoint's signature; any tampering fails.
func TestProof_SelfSufficientAndTamperEvident(t *testing.T) {
	chain := chainOf(t, applyAll(t, oneTenantStream(2*CheckpointEvents+20)), "acme")
	key := testKey()
	pub := key.Public().(ed25519.PublicKey)
	_, other, _ := GenerateKey(nil)
	for _, i := range []int{0, 1, 517, CheckpointEvents - 1, CheckpointEvents, CheckpointEvents + 3} {
		b, err := json.Marshal(chainProof(t, chain, i, key))
		if err != nil {
			t.Fatal(err)
		}
		p, err := DecodeProof(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifyProofSigned(p, pub); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if err := VerifyProofSigned(p, other.Public().(ed25519.PublicKey)); err == nil {
			t.Fatalf("entry %d: verified with another key", i)
		}
	}
	good := chainProof(t, chain, CheckpointEvents+3, key)
	for name, tamper := range map[string]func(p *Proof){
		"body":        func(p *Proof) { p.Event.Body[len(p.Event.Body)-1] ^= 1 },
		"prev link":   func(p *Proof) { p.Event.PrevLink[0] ^= 1 },
		"hlc":         func(p *Proof) { p.Event.HLC.Logical++ },
		"job id":      func(p *Proof) { p.Event.JobID += "x" },
		"type":        func(p *Proof) { p.Event.Type++ },
		"link":        func(p *Proof) { p.Link[0] ^= 1 },
		"path":        func(p *Proof) { p.Path[2][0] ^= 1 },
		"seq":         func(p *Proof) { p.Seq++ },
		"root":        func(p *Proof) { p.Batch.Root[0] ^= 1 },
		"no event":    func(p *Proof) { p.Event = nil },
		"unsigned":    func(p *Proof) { p.Batch.Signature = nil },
		"batch range": func(p *Proof) { p.Batch.FirstSeq++ },
	} {
		b, _ := json.Marshal(good)
		p, err := DecodeProof(b) // a deep copy
		if err != nil {
			t.Fatal(err)
		}
		tamper(&p)
		if err := VerifyProofSigned(p, pub); err == nil {
			t.Errorf("%s: a tampered proof verified", name)
		}
	}
	// The first entry of a batch: its previous link must be the
	// checkpoint's.
	p := chainProof(t, chain, CheckpointEvents, key)
	p.Batch = SignCheckpoint(Checkpoint{Tenant: "acme", FirstSeq: p.Batch.FirstSeq, LastSeq: p.Batch.LastSeq,
		PrevLink: fsm.Hash{1}, LastLink: p.Batch.LastLink, Root: p.Batch.Root}, key)
	if err := VerifyProofSigned(p, pub); err == nil {
		t.Error("a batch's first entry verified against another previous link")
	}
}

func TestDecodeProof_Refuses(t *testing.T) {
	for name, in := range map[string]string{
		"unknown field": `{"seq":1,"x":1}`,
		"trailing":      `{"seq":1} {}`,
		"half signed":   `{"seq":1,"checkpoint":{"key_id":"ab"}}`,
		"not json":      `seq=1`,
	} {
		if _, err := DecodeProof([]byte(in)); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, err := DecodeProof(make([]byte, MaxProofBytes+1)); err == nil {
		t.Error("an oversized proof decoded")
	}
}

func FuzzDecodeProof(f *testing.F) {
	f.Add([]byte(`{"seq":3,"link":"00","path":[],"checkpoint":{"tenant":"acme","first_seq":1,"last_seq":5}}`))
	f.Add([]byte(`{"seq":1,"event":{"id":"x","body":"AA=="}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeProof(b)
		if err != nil {
			return
		}
		_ = VerifyProof(p) // never panics
		if len(p.Path) > maxProofPath {
			t.Fatalf("a path of %d hashes decoded", len(p.Path))
		}
	})
}

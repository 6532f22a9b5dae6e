package bundle

import (
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// Every leaf of trees of every size up to 70 has a proof that verifies,
// and a proof with another link, another seq or a changed path does not.
func TestInclusionProofs(t *testing.T) {
	for n := 1; n <= 70; n++ {
		links := make([]fsm.Hash, n)
		for i := range links {
			links[i] = sha256.Sum256([]byte{byte(n), byte(i)})
		}
		c := Checkpoint{Tenant: "acme", FirstSeq: 1001, LastSeq: uint64(1000 + n), Root: MerkleRoot(links)}
		for i := range links {
			p := Proof{Seq: c.FirstSeq + uint64(i), Link: links[i], Path: InclusionPath(links, i), Batch: SignedCheckpoint{Checkpoint: c}}
			if err := VerifyProof(p); err != nil {
				t.Fatalf("n=%d i=%d: %v", n, i, err)
			}
			bad := p
			bad.Link[0] ^= 1
			if err := VerifyProof(bad); !errors.Is(err, ErrProof) {
				t.Fatalf("n=%d i=%d: another link verified", n, i)
			}
			if n > 1 {
				bad = p
				bad.Seq = c.FirstSeq + uint64((i+1)%n)
				if err := VerifyProof(bad); !errors.Is(err, ErrProof) {
					t.Fatalf("n=%d i=%d: another seq verified", n, i)
				}
				bad = p
				bad.Path = append([]fsm.Hash(nil), p.Path...)
				bad.Path[0][0] ^= 1
				if err := VerifyProof(bad); !errors.Is(err, ErrProof) {
					t.Fatalf("n=%d i=%d: a changed path verified", n, i)
				}
			}
		}
	}
}

// A proof's path is at most ceil(log2(CheckpointEvents)) hashes.
func TestInclusionPath_Length(t *testing.T) {
	links := make([]fsm.Hash, CheckpointEvents)
	for i := range links {
		links[i][0] = byte(i)
	}
	for _, i := range []int{0, 511, 999} {
		if n := len(InclusionPath(links, i)); n > 10 {
			t.Fatalf("path of leaf %d: %d hashes", i, n)
		}
	}
}

func FuzzVerifyProof(f *testing.F) {
	f.Add(uint64(3), []byte{1, 2, 3}, uint64(1), uint64(5))
	f.Fuzz(func(t *testing.T, seq uint64, raw []byte, first, last uint64) {
		p := Proof{Seq: seq, Batch: SignedCheckpoint{Checkpoint: Checkpoint{FirstSeq: first, LastSeq: last}}}
		for len(raw) >= 32 && len(p.Path) < 64 {
			var h fsm.Hash
			copy(h[:], raw)
			p.Path, raw = append(p.Path, h), raw[32:]
		}
		_ = VerifyProof(p) // never panics, never verifies by chance here
	})
}

func TestSignedCheckpoints(t *testing.T) {
	pub, priv, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := GenerateKey(nil)
	c := Checkpoint{Tenant: "acme", FirstSeq: 1, LastSeq: 1000, Root: fsm.Hash{1}}
	sc := SignCheckpoint(c, priv)
	if err := VerifyCheckpoint(sc, pub); err != nil || sc.KeyID != KeyID(pub) {
		t.Fatalf("signed: %v", err)
	}
	if err := VerifyCheckpoint(sc, other); err == nil {
		t.Fatal("another key verified")
	}
	sc.Root[0] ^= 1
	if err := VerifyCheckpoint(sc, pub); err == nil {
		t.Fatal("a changed root verified")
	}
	if u := SignCheckpoint(c, nil); u.Signature != nil || VerifyCheckpoint(u, pub) == nil {
		t.Fatal("an unsigned checkpoint verified")
	}
}

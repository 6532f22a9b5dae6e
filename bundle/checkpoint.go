package bundle

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/strata-ledger/strata/fsm"
)

// Chain checkpoints (seed 000): a tenant's chain cut into batches of
// CheckpointEvents entries; a batch's checkpoint names its first and
// last sequence numbers, the link before it and its last link, and the
// Merkle root over its links (RFC 6962's tree: leaf = SHA-256(0x00 ‖
// link), node = SHA-256(0x01 ‖ left ‖ right), the left subtree the
// largest power of two below the size). A verifier holding a checkpoint
// checks that one event belongs to its batch with an inclusion proof of
// log2(CheckpointEvents) hashes, without the rest of the chain. A batch's
// checkpoint is a function of the chain alone, so every gate derives the
// same one.

// CheckpointEvents is the entries of one batch.
const CheckpointEvents = 1_000

// Checkpoint is one batch of a tenant's chain.
type Checkpoint struct {
	Tenant   string   `json:"tenant"`
	FirstSeq uint64   `json:"first_seq"`
	LastSeq  uint64   `json:"last_seq"`
	PrevLink fsm.Hash `json:"prev_link"` // zero: the batch starts at genesis
	LastLink fsm.Hash `json:"last_link"`
	Root     fsm.Hash `json:"root"`
}

// ErrProof is the error of a proof that does not verify.
var ErrProof = errors.New("bundle: inclusion proof does not verify")

func leafHash(link fsm.Hash) fsm.Hash {
	var b [33]byte
	copy(b[1:], link[:])
	return sha256.Sum256(b[:])
}

func nodeHash(l, r fsm.Hash) fsm.Hash {
	var b [65]byte
	b[0] = 1
	copy(b[1:], l[:])
	copy(b[33:], r[:])
	return sha256.Sum256(b[:])
}

// split is the size of the left subtree of n > 1 leaves: the largest
// power of two below n.
func split(n int) int {
	k := 1
	for k<<1 < n {
		k <<= 1
	}
	return k
}

// MerkleRoot is the root over links (at least one).
func MerkleRoot(links []fsm.Hash) fsm.Hash {
	if len(links) == 1 {
		return leafHash(links[0])
	}
	k := split(len(links))
	return nodeHash(MerkleRoot(links[:k]), MerkleRoot(links[k:]))
}

// InclusionPath is the audit path of links[i].
func InclusionPath(links []fsm.Hash, i int) []fsm.Hash {
	if len(links) <= 1 {
		return nil
	}
	k := split(len(links))
	if i < k {
		return append(InclusionPath(links[:k], i), MerkleRoot(links[k:]))
	}
	return append(InclusionPath(links[k:], i-k), MerkleRoot(links[:k]))
}

// rootFromPath recomputes the root of n leaves from leaf i's hash and its
// audit path (leaf level first), consuming the path from its end as the
// recursion descends.
func rootFromPath(h fsm.Hash, i, n int, path []fsm.Hash) (fsm.Hash, error) {
	if n == 1 {
		if len(path) != 0 {
			return fsm.Hash{}, fmt.Errorf("%w: %d hashes too many", ErrProof, len(path))
		}
		return h, nil
	}
	if len(path) == 0 {
		return fsm.Hash{}, fmt.Errorf("%w: path too short", ErrProof)
	}
	k := split(n)
	sib, rest := path[len(path)-1], path[:len(path)-1]
	if i < k {
		l, err := rootFromPath(h, i, k, rest)
		return nodeHash(l, sib), err
	}
	r, err := rootFromPath(h, i-k, n-k, rest)
	return nodeHash(sib, r), err
}

// SignedCheckpoint is a checkpoint signed by a gate's key (when the
// cluster has one): the signature is ed25519 over Checkpoint.Digest.
type SignedCheckpoint struct {
	Checkpoint
	KeyID     string `json:"key_id,omitempty"`
	Signature []byte `json:"signature,omitempty"`
}

// Digest is what a checkpoint's signature covers: SHA-256 over a
// domain string, the tenant, the sequence numbers, both links and the
// root, each field at a fixed place.
func (c Checkpoint) Digest() [32]byte {
	h := sha256.New()
	h.Write([]byte("strata checkpoint v1\x00"))
	h.Write([]byte(c.Tenant))
	h.Write([]byte{0})
	var n [16]byte
	binary.BigEndian.PutUint64(n[:8], c.FirstSeq)
	binary.BigEndian.PutUint64(n[8:], c.LastSeq)
	h.Write(n[:])
	h.Write(c.PrevLink[:])
	h.Write(c.LastLink[:])
	h.Write(c.Root[:])
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// SignCheckpoint signs c with key (nil: unsigned).
func SignCheckpoint(c Checkpoint, key ed25519.PrivateKey) SignedCheckpoint {
	sc := SignedCheckpoint{Checkpoint: c}
	if key != nil {
		d := c.Digest()
		sc.KeyID = KeyID(key.Public().(ed25519.PublicKey))
		sc.Signature = ed25519.Sign(key, d[:])
	}
	return sc
}

// VerifyCheckpoint checks sc's signature with pub.
func VerifyCheckpoint(sc SignedCheckpoint, pub ed25519.PublicKey) error {
	d := sc.Digest()
	if len(sc.Signature) != ed25519.SignatureSize || !ed25519.Verify(pub, d[:], sc.Signature) {
		return fmt.Errorf("%w: checkpoint %d..%d of %s is not signed by key %s", ErrProof, sc.FirstSeq, sc.LastSeq, sc.Tenant, KeyID(pub))
	}
	return nil
}

// DecodeCheckpoint reads a checkpoint frame's JSON strictly (no unknown
// fields, no trailing data), bounded by MaxCheckpointBytes: a key id and
// a signature come together or not at all.
func DecodeCheckpoint(b []byte) (SignedCheckpoint, error) {
	if len(b) > MaxCheckpointBytes {
		return SignedCheckpoint{}, fmt.Errorf("checkpoint of %d bytes, over %d", len(b), MaxCheckpointBytes)
	}
	var sc SignedCheckpoint
	if err := decodeStrict(b, &sc); err != nil {
		return SignedCheckpoint{}, fmt.Errorf("checkpoint: %w", err)
	}
	switch {
	case (sc.KeyID == "") != (len(sc.Signature) == 0):
		return SignedCheckpoint{}, errors.New("checkpoint: a key id without a signature, or a signature without a key id")
	case sc.KeyID != "" && len(sc.Signature) != ed25519.SignatureSize:
		return SignedCheckpoint{}, fmt.Errorf("checkpoint: signature of %d bytes", len(sc.Signature))
	}
	return sc, nil
}

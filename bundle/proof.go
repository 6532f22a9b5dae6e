package bundle

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// Proof shows that an event is in a checkpoint's batch, self-sufficiently:
// Event is the event's content, from which a verifier recomputes Link
// (link = SHA-256(prev_link ‖ hlc ‖ job_id ‖ type ‖ SHA-256(body)),
// fsm.ChainLink), and Path takes Link up the batch's Merkle tree to the
// checkpoint's root; the checkpoint's signature, when it has one, binds
// the root to a gate's key (VerifyCheckpoint). A verifier needs nothing
// else: not the chain, not the cluster.
type Proof struct {
	Seq   uint64           `json:"seq"`
	Link  fsm.Hash         `json:"link"`
	Path  []fsm.Hash       `json:"path"` // siblings, leaf level first
	Batch SignedCheckpoint `json:"checkpoint"`
	// Event is the content Link is computed from (nil in a proof of the
	// Merkle path alone: VerifyProof then checks only the path).
	Event *ProofEvent `json:"event,omitempty"`
}

// ProofEvent is what an event's link is computed from.
type ProofEvent struct {
	ID fsm.EventID `json:"id"`
	// PrevLink is the link of the entry before (zero for the first entry
	// of the chain, whose link hashes "genesis" instead).
	PrevLink fsm.Hash      `json:"prev_link"`
	HLC      hlc.Timestamp `json:"hlc"`
	JobID    string        `json:"job_id"`
	Type     fsm.EventType `json:"type"`
	// Body is the body's canonical encoding (fsm.AppendBody): its
	// SHA-256 is the link's last part.
	Body []byte `json:"body"`
}

// NewProofEvent is the ProofEvent of se, whose previous link is prev.
func NewProofEvent(se *fsm.StoredEvent, prev fsm.Hash) (*ProofEvent, error) {
	body, err := fsm.AppendBody(nil, se.Body)
	if err != nil {
		return nil, err
	}
	return &ProofEvent{ID: se.ID, PrevLink: prev, HLC: se.HLC, JobID: se.JobID, Type: se.Type, Body: body}, nil
}

// Link recomputes the event's link at seq.
func (e *ProofEvent) Link(seq uint64) fsm.Hash {
	ev := fsm.Event{ID: e.ID, HLC: e.HLC, JobID: e.JobID, Type: e.Type}
	return fsm.ChainLink(fsm.ChainHead{Seq: seq - 1, Link: e.PrevLink}, &ev, sha256.Sum256(e.Body))
}

// VerifyProof checks p: with an Event, that its content gives p.Link
// (and, for the batch's first entry, that its previous link is the
// checkpoint's); then that p.Link at p.Seq is in p.Batch's tree. It
// does not check the checkpoint's signature: VerifyProofSigned does.
func VerifyProof(p Proof) error {
	c := p.Batch
	if p.Seq < c.FirstSeq || p.Seq > c.LastSeq || c.LastSeq < c.FirstSeq || c.LastSeq-c.FirstSeq >= CheckpointEvents || p.Seq == 0 {
		return fmt.Errorf("%w: seq %d outside the batch %d..%d", ErrProof, p.Seq, c.FirstSeq, c.LastSeq)
	}
	if e := p.Event; e != nil {
		switch {
		case len(e.JobID) > fsm.MaxJobIDBytes:
			return fmt.Errorf("%w: event %s: job id of %d bytes", ErrProof, e.ID, len(e.JobID))
		case p.Seq == 1 && e.PrevLink != (fsm.Hash{}):
			return fmt.Errorf("%w: event %s: the chain's first entry with a previous link", ErrProof, e.ID)
		case p.Seq == c.FirstSeq && e.PrevLink != c.PrevLink:
			return fmt.Errorf("%w: event %s: previous link %s, the checkpoint's is %s", ErrProof, e.ID, e.PrevLink, c.PrevLink)
		case e.Link(p.Seq) != p.Link:
			return fmt.Errorf("%w: event %s: its content does not give link %s", ErrProof, e.ID, p.Link)
		}
	}
	root, err := rootFromPath(leafHash(p.Link), int(p.Seq-c.FirstSeq), int(c.LastSeq-c.FirstSeq+1), p.Path)
	if err != nil {
		return err
	}
	if root != c.Root {
		return fmt.Errorf("%w: seq %d", ErrProof, p.Seq)
	}
	return nil
}

// VerifyProofSigned is VerifyProof requiring the event's content and a
// checkpoint signed by pub (strata chain proof --pubkey).
func VerifyProofSigned(p Proof, pub ed25519.PublicKey) error {
	if p.Event == nil {
		return fmt.Errorf("%w: the proof carries no event content", ErrProof)
	}
	if err := VerifyProof(p); err != nil {
		return err
	}
	return VerifyCheckpoint(p.Batch, pub)
}

// MaxProofBytes bounds a proof's JSON (DecodeProof): the body of one
// event and a path of a few hashes.
const MaxProofBytes = 256 << 10

// maxProofPath bounds a proof's path: a batch of CheckpointEvents leaves
// needs at most 10 hashes.
const maxProofPath = 64

// DecodeProof reads a proof's JSON (GET /v1/chain/proof, strata chain
// proof -o json) strictly: no unknown fields, no trailing data, at most
// MaxProofBytes and maxProofPath hashes, a checkpoint's key id and
// signature together or not at all. It does not verify: VerifyProof does.
func DecodeProof(b []byte) (Proof, error) {
	if len(b) > MaxProofBytes {
		return Proof{}, fmt.Errorf("proof of %d bytes, over %d", len(b), MaxProofBytes)
	}
	var p Proof
	if err := decodeStrict(b, &p); err != nil {
		return Proof{}, fmt.Errorf("proof: %w", err)
	}
	sc := p.Batch
	switch {
	case len(p.Path) > maxProofPath:
		return Proof{}, fmt.Errorf("proof: a path of %d hashes, over %d", len(p.Path), maxProofPath)
	case (sc.KeyID == "") != (len(sc.Signature) == 0):
		return Proof{}, fmt.Errorf("proof: checkpoint: a key id without a signature, or a signature without a key id")
	case sc.KeyID != "" && len(sc.Signature) != ed25519.SignatureSize:
		return Proof{}, fmt.Errorf("proof: checkpoint: signature of %d bytes", len(sc.Signature))
	}
	return p, nil
}

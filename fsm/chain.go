package fsm

import (
	"crypto/sha256"
	"fmt"
)

// genesis is the prev_link of a tenant's first event (DESIGN §3).
const genesis = "genesis"

// maxLinkInput bounds ChainLink's hash input: prev link, hlc, job id, type,
// body hash.
const maxLinkInput = 32 + 16 + MaxJobIDBytes + 1 + 32

// ChainLink computes an event's audit chain link (DESIGN §3, fsm/DESIGN.md):
//
//	link = SHA-256(prev_link ‖ hlc ‖ job_id ‖ type ‖ SHA-256(body))
//
// prev_link is the 7 ASCII bytes "genesis" when prev is the empty head
// (Seq 0) and prev.Link otherwise; hlc is the 16-byte binary HLC; job_id
// its bytes; type the one-byte wire code; bodyHash SHA-256 of the body's
// canonical encoding.
func ChainLink(prev ChainHead, e *Event, bodyHash Hash) Hash {
	var buf [maxLinkInput]byte
	return chainLink(buf[:0], prev, e, bodyHash)
}

func chainLink(buf []byte, prev ChainHead, e *Event, bodyHash Hash) Hash {
	if prev.Seq == 0 {
		buf = append(buf, genesis...)
	} else {
		buf = append(buf, prev.Link[:]...)
	}
	buf = e.HLC.AppendBinary(buf)
	buf = append(buf, e.JobID...)
	buf = append(buf, byte(e.Type))
	buf = append(buf, bodyHash[:]...)
	return sha256.Sum256(buf)
}

// BodyHash returns SHA-256 of the body's canonical encoding.
func BodyHash(b Body) (Hash, error) {
	enc, err := AppendBody(nil, b)
	if err != nil {
		return Hash{}, err
	}
	return sha256.Sum256(enc), nil
}

// verifyChain recomputes a tenant's chain from its stored events (bodies
// re-encoded and re-hashed, not trusted) and returns its head, or a
// *ChainError naming the first event whose stored link, body hash, tenant
// or sequence number does not verify.
func verifyChain(tx ReadTx, tenant string) (ChainHead, error) {
	var head ChainHead
	var buf []byte
	err := tx.ChainEvents(tenant, 0, func(se *StoredEvent) error {
		broken := func(reason string) error {
			return &ChainError{Tenant: tenant, Seq: head.Seq + 1, EventID: se.ID, JobID: se.JobID, Reason: reason}
		}
		switch {
		case se.Seq != head.Seq+1:
			return broken(fmt.Sprintf("stored sequence number %d", se.Seq))
		case se.Tenant != tenant:
			return broken(fmt.Sprintf("event of tenant %q", se.Tenant))
		case se.Body == nil:
			return broken("no body")
		}
		var err error
		if buf, err = AppendBody(buf[:0], se.Body); err != nil {
			return broken(err.Error())
		}
		bh := Hash(sha256.Sum256(buf))
		if bh != se.BodyHash {
			return broken("body does not match its stored hash")
		}
		link := ChainLink(head, &se.Event, bh)
		if link != se.Link {
			return broken("stored link does not match the recomputed link")
		}
		head = ChainHead{Seq: se.Seq, Link: link}
		return nil
	})
	if err != nil {
		return ChainHead{}, err
	}
	stored, _, err := tx.ChainHead(tenant)
	if err != nil {
		return ChainHead{}, fmt.Errorf("verify chain %q: %w", tenant, err)
	}
	if stored != head {
		return ChainHead{}, &ChainError{Tenant: tenant, Seq: stored.Seq,
			Reason: fmt.Sprintf("stored head (seq %d) does not match the recomputed head (seq %d)", stored.Seq, head.Seq)}
	}
	return head, nil
}

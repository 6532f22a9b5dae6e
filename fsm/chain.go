package fsm

import (
	"crypto/sha256"
	"errors"
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
	p, err := verifyChainPage(tx, tenant, 0, nil, 0)
	return p.Head, err
}

// ChainPage is one page of a chain verification (Ledger.VerifyChainPage).
type ChainPage struct {
	// Head is the last event the page verified: the event it started
	// after when it verified none.
	Head ChainHead
	// Events is how many events the page recomputed.
	Events int
	// Done: the page reached the tenant's stored head, and it matches.
	// Otherwise the next page starts after Head.
	Done bool
}

// verifyChainPage recomputes at most limit (0: every) events of a tenant's
// chain, those after the event of sequence number after (0: from the
// first), as verifyChain does. link is that event's link as a previous
// page verified it; nil takes the stored one. A stored link other than
// link, or a missing event at after, is a *ChainError (the chain changed
// between the pages); an after beyond the stored head is ErrInvalidCursor.
func verifyChainPage(tx ReadTx, tenant string, after uint64, link *Hash, limit int) (ChainPage, error) {
	var head ChainHead
	if after > 0 {
		var err error
		if head, err = chainCursor(tx, tenant, after, link); err != nil {
			return ChainPage{}, err
		}
	} else if link != nil {
		return ChainPage{}, fmt.Errorf("%w: a chain link to continue from needs the sequence number of its event", ErrInvalidCursor)
	}
	var buf []byte
	events, more := 0, false
	err := tx.ChainEvents(tenant, after, func(se *StoredEvent) error {
		if limit > 0 && events == limit {
			more = true
			return errStop
		}
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
		events++
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return ChainPage{}, err
	}
	page := ChainPage{Head: head, Events: events}
	if more {
		return page, nil
	}
	stored, _, err := tx.ChainHead(tenant)
	if err != nil {
		return ChainPage{}, fmt.Errorf("verify chain %q: %w", tenant, err)
	}
	if stored != head {
		return ChainPage{}, &ChainError{Tenant: tenant, Seq: stored.Seq,
			Reason: fmt.Sprintf("stored head (seq %d) does not match the recomputed head (seq %d)", stored.Seq, head.Seq)}
	}
	page.Done = true
	return page, nil
}

// chainCursor is the head a page continuing after event after starts
// from: that event's stored link, which must be link when given.
func chainCursor(tx ReadTx, tenant string, after uint64, link *Hash) (ChainHead, error) {
	stored, _, err := tx.ChainHead(tenant)
	if err != nil {
		return ChainHead{}, fmt.Errorf("verify chain %q: %w", tenant, err)
	}
	if after > stored.Seq {
		return ChainHead{}, fmt.Errorf("%w: tenant %q's chain ends at sequence number %d, before %d", ErrInvalidCursor, tenant, stored.Seq, after)
	}
	var at *StoredEvent
	err = tx.ChainEvents(tenant, after-1, func(se *StoredEvent) error {
		at = se
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return ChainHead{}, err
	}
	switch {
	case at == nil || at.Seq != after:
		return ChainHead{}, &ChainError{Tenant: tenant, Seq: after, Reason: "no stored event to continue after"}
	case link != nil && *link != at.Link:
		return ChainHead{}, &ChainError{Tenant: tenant, Seq: after, EventID: at.ID, JobID: at.JobID,
			Reason: "stored link differs from the link verified for it before"}
	}
	return ChainHead{Seq: after, Link: at.Link}, nil
}

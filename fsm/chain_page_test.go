package fsm_test

import (
	"errors"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// verifyPages pages through a tenant's chain limit events at a time, each
// page continuing from the link the one before verified; it returns the
// pages it took, the last head, and the error that stopped it.
func verifyPages(led *fsm.Ledger, tenant string, limit int) (pages, events int, head fsm.ChainHead, err error) {
	var link *fsm.Hash
	for {
		p, err := led.VerifyChainPage(tenant, head.Seq, link, limit)
		pages++
		if err != nil {
			return pages, events, head, err
		}
		if p.Events > limit {
			return pages, events, head, errors.New("a page went over its limit")
		}
		events += p.Events
		head = p.Head
		l := p.Head.Link
		link = &l
		if p.Done {
			return pages, events, head, nil
		}
	}
}

// A chain longer than the page limit verifies in pages that together
// recompute it once, end at the head VerifyChain finds, and report a
// broken link on a later page at its sequence number.
func TestVerifyChainPage_PagesAndABrokenLinkOnALaterPage(t *testing.T) {
	led, st := fsmtest.NewLedger(t, newStore)
	fsmtest.Drive(t, 21, led, fsmtest.NewModel(), 1500, 0)
	const tenant, limit = "acme", 7
	want, err := led.VerifyChain(tenant)
	if err != nil || want.Seq < 4*limit {
		t.Fatalf("chain of %s: %+v %v", tenant, want, err)
	}
	pages, events, head, err := verifyPages(led, tenant, limit)
	if err != nil || head != want || events != int(want.Seq) || pages != int(want.Seq+limit-1)/limit {
		t.Fatalf("%d events in pages of %d: %d pages, %d events, head %+v, %v; want head %+v", want.Seq, limit, pages, events, head, err, want)
	}

	// Break the link of an event three quarters in.
	var orig *fsm.StoredEvent
	seq := want.Seq * 3 / 4
	if err := st.View(func(tx fsm.ReadTx) error {
		return tx.ChainEvents(tenant, seq-1, func(se *fsm.StoredEvent) error { orig = se; return errStop })
	}); err != nil && !errors.Is(err, errStop) {
		t.Fatal(err)
	}
	bad := *orig
	bad.Link[0] ^= 1
	put := func(se *fsm.StoredEvent) {
		if err := st.Update(func(tx fsm.Tx) error { return tx.PutEvent(se) }); err != nil {
			t.Fatal(err)
		}
	}
	put(&bad)
	pages, _, _, err = verifyPages(led, tenant, limit)
	var ce *fsm.ChainError
	if !errors.As(err, &ce) || ce.Seq != seq || ce.EventID != orig.ID || pages != int(seq+limit-1)/limit || pages < 3 {
		t.Fatalf("broken link at seq %d: stopped on page %d with %v", seq, pages, err)
	}

	// A cursor whose link is not the stored one (the chain changed
	// between two pages): broken at the cursor.
	goodLink := orig.Link
	if _, err := led.VerifyChainPage(tenant, seq, &goodLink, limit); !errors.As(err, &ce) || ce.Seq != seq {
		t.Fatalf("continuing from a link that differs from the stored one: %v", err)
	}
	put(orig)
	if _, err := led.VerifyChainPage(tenant, seq, &goodLink, limit); err != nil {
		t.Fatalf("continuing from the right link: %v", err)
	}
	// Cursors that name no event.
	if _, err := led.VerifyChainPage(tenant, want.Seq+1, nil, limit); !errors.Is(err, fsm.ErrInvalidCursor) {
		t.Fatalf("after beyond the head: %v", err)
	}
	if _, err := led.VerifyChainPage(tenant, 0, &goodLink, limit); !errors.Is(err, fsm.ErrInvalidCursor) {
		t.Fatalf("a link without its sequence number: %v", err)
	}
	// Continuing at the head: a page of no events, done.
	if p, err := led.VerifyChainPage(tenant, want.Seq, nil, limit); err != nil || !p.Done || p.Events != 0 || p.Head != want {
		t.Fatalf("a page after the head: %+v %v", p, err)
	}
}

var errStop = errors.New("stop")

package chaincheck

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// Every tenant's chain verifies on a sound ledger; after one stored event's
// link is altered behind the ledger, that tenant alone is reported broken,
// counted and named, across pages (the chain is longer than one page).
func TestPass_FindsTheBrokenChain(t *testing.T) {
	st := memstore.New()
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	m := fsmtest.NewModel()
	fsmtest.Drive(t, 31, led, m, 3000, 0)
	reg := prometheus.NewRegistry()
	c, err := New(led, 0, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	c.page = 50 // many pages per chain
	c.Pass(context.Background())
	if b := c.Broken(); len(b) != 0 {
		t.Fatalf("sound ledger: broken %v", b)
	}
	ok := testkit.MetricValue(t, reg, "strata_chain_verifications_total", "result", "ok")
	if ok < 2 {
		t.Fatalf("%v chains verified, want every tenant's", ok)
	}

	// Alter the link of a late event of acme's chain, past the first page.
	head := m.ChainHead("acme")
	var victim *fsm.StoredEvent
	if err := st.View(func(tx fsm.ReadTx) error {
		return tx.ChainEvents("acme", head.Seq-1, func(se *fsm.StoredEvent) error {
			c := *se
			victim = &c
			return nil
		})
	}); err != nil || victim == nil {
		t.Fatalf("no event to alter: %v", err)
	}
	victim.Link[0] ^= 1
	if err := st.Update(func(tx fsm.Tx) error { return tx.PutEvent(victim) }); err != nil {
		t.Fatal(err)
	}
	c.Pass(context.Background())
	b := c.Broken()
	if len(b) != 1 || b["acme"] == "" {
		t.Fatalf("broken %v, want acme alone", b)
	}
	if v := testkit.MetricValue(t, reg, "strata_chain_broken_tenants"); v != 1 {
		t.Fatalf("strata_chain_broken_tenants = %v", v)
	}
}

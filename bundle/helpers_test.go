package bundle

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// testCreated is the creation time of test bundles.
var testCreated = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// testKey is a fixed signing key (seed 0x01...).
func testKey() ed25519.PrivateKey { return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)) }

// applyAll applies events to a new memstore ledger in batches and
// returns the store.
func applyAll(t testing.TB, events []fsm.Event) *memstore.Store {
	t.Helper()
	st := memstore.New()
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	const batch = 1000
	for i, index := 0, uint64(1); i < len(events); i, index = i+batch, index+1 {
		if _, err := led.Apply(index, events[i:min(i+batch, len(events))]); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// chainOf returns a tenant's chain as the store holds it.
func chainOf(t testing.TB, st fsm.Store, tenant string) []*fsm.StoredEvent {
	t.Helper()
	var out []*fsm.StoredEvent
	err := st.View(func(tx fsm.ReadTx) error {
		return tx.ChainEvents(tenant, 0, func(se *fsm.StoredEvent) error {
			out = append(out, se)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// genChain applies n events of fsmtest.Gen(seed) to a memstore ledger and
// returns the chain of tenant "acme": every event type, late events (so
// HLCs are not in seq order), real links.
func genChain(t testing.TB, seed uint64, n int) []*fsm.StoredEvent {
	t.Helper()
	g := fsmtest.NewGen(seed)
	events := make([]fsm.Event, n)
	for i := range events {
		events[i] = g.Next()
	}
	chain := chainOf(t, applyAll(t, events), "acme")
	if len(chain) == 0 {
		t.Fatalf("seed %d: no acme events", seed)
	}
	return chain
}

// oneTenantStream is fsmtest.BenchStream's mix of n events with every
// event moved to tenant "acme" (job specs included), so one chain holds
// them all.
func oneTenantStream(n int) []fsm.Event {
	events, _ := fsmtest.BenchStream(n)
	moved := map[fsm.Body]fsm.Body{}
	for i := range events {
		e := &events[i]
		e.Tenant = "acme"
		if c, ok := e.Body.(*fsm.JobCreated); ok {
			if moved[c] == nil {
				nc := *c
				nc.Spec.Tenant = "acme"
				moved[c] = &nc
			}
			e.Body = moved[c]
		}
	}
	return events
}

// writeBundle writes chain as a bundle (Rechain false: the chain as the
// ledger holds it).
func writeBundle(t testing.TB, chain []*fsm.StoredEvent, signer ed25519.PrivateKey) []byte {
	t.Helper()
	var buf bytes.Buffer
	_, err := WriteChain(&buf, WriterConfig{Tenant: "acme", CreatedAt: testCreated, CreatedBy: "use1-gate1", Signer: signer},
		func(fn func(*fsm.StoredEvent) error) error {
			for _, se := range chain {
				if err := fn(se); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// removeOnClose is a run file removed when closed.
type removeOnClose struct{ *os.File }

func (f removeOnClose) Close() error {
	err := f.File.Close()
	os.Remove(f.Name())
	return err
}

// tempRuns makes the run files of an external merge in dir.
func tempRuns(dir string) func() (RunFile, error) {
	return func() (RunFile, error) {
		f, err := os.CreateTemp(dir, "merge-*.run")
		if err != nil {
			return nil, err
		}
		return removeOnClose{f}, nil
	}
}

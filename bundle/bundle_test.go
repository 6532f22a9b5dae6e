package bundle

import (
	"bytes"
	"errors"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

func TestWriteVerify_RoundTripOfALedgerChain(t *testing.T) {
	chain := genChain(t, 1, 3000)
	b := writeBundle(t, chain, nil)
	var got []*fsm.StoredEvent
	rep, err := Verify(bytes.NewReader(b), VerifyConfig{OnEntry: func(e *Entry) error {
		got = append(got, e.Stored)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	last := chain[len(chain)-1]
	if rep.Entries != uint64(len(chain)) || rep.Head != (fsm.ChainHead{Seq: last.Seq, Link: last.Link}) {
		t.Fatalf("report %+v, want %d entries ending at seq %d", rep, len(chain), last.Seq)
	}
	if m := rep.Manifest; m.Tenant != "acme" || m.Count != uint64(len(chain)) || m.CreatedBy != "use1-gate1" || m.BundleID == "" {
		t.Fatalf("manifest %+v", m)
	}
	for i := range chain {
		if got[i].Seq != chain[i].Seq || got[i].Link != chain[i].Link || got[i].BodyHash != chain[i].BodyHash || got[i].ID != chain[i].ID {
			t.Fatalf("entry %d: %+v, want %+v", i, got[i], chain[i])
		}
	}
	t.Logf("%d events, %d bytes (%d per event)", len(chain), len(b), len(b)/len(chain))
}

func TestWriter_RefusesABrokenChain(t *testing.T) {
	chain := genChain(t, 2, 500)
	bad := *chain[3]
	bad.Link[0] ^= 1
	in := append(append(append([]*fsm.StoredEvent{}, chain[:3]...), &bad), chain[4:]...)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterConfig{Tenant: "acme", CreatedAt: testCreated})
	if err != nil {
		t.Fatal(err)
	}
	for i, se := range in {
		err = w.Append(se)
		if i < 3 && err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			break
		}
	}
	var be *BreakError
	if !errors.As(err, &be) || be.Index != 3 || be.Field != "link" {
		t.Fatalf("err = %v, want a link break at entry 3", err)
	}
	other := *chain[0]
	other.Tenant = "globex"
	w2, _ := NewWriter(&buf, WriterConfig{Tenant: "acme", CreatedAt: testCreated})
	if err := w2.Append(&other); !errors.Is(err, ErrTenant) {
		t.Fatalf("other tenant: err = %v", err)
	}
}

func TestWriteVerify_EmptyChain(t *testing.T) {
	b := writeBundle(t, nil, nil)
	rep, err := Verify(bytes.NewReader(b), VerifyConfig{})
	if err != nil || rep.Entries != 0 || rep.Manifest.Count != 0 {
		t.Fatalf("rep %+v, err %v", rep, err)
	}
}

package commit

import (
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

func testStamper(t *testing.T, wall *int64) *Stamper {
	t.Helper()
	clock, err := hlc.New(hlc.Config{Node: 7, Physical: func() int64 { return *wall }, Persister: &hlc.MemoryPersister{}, MaxOffset: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewStamper(clock, "m1", "use1")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStamper_OwnReceivedPlanned(t *testing.T) {
	wall := int64(1_700_000_000_000)
	s := testStamper(t, &wall)

	var own fsm.Event
	if err := s.Own(&own); err != nil {
		t.Fatal(err)
	}
	if own.ID.IsZero() || own.Node != "m1" || own.Region != "use1" || own.HLC.WallMs != wall {
		t.Fatalf("own: %+v", own)
	}
	other := fsm.Event{Region: "euw1"}
	if err := s.Own(&other); err != nil || other.Region != "euw1" || !own.HLC.Less(other.HLC) || other.ID == own.ID {
		t.Fatalf("own keeps a named region and moves on: %+v, %v", other, err)
	}

	given := hlc.Timestamp{WallMs: wall + 100, Logical: 3, Node: 9}
	rcv := fsm.Event{Node: "client-node", HLC: given}
	if err := s.Received(&rcv); err != nil || rcv.HLC != given || rcv.Node != "client-node" || rcv.Region != "use1" || rcv.ID.IsZero() {
		t.Fatalf("received with an HLC: %+v, %v", rcv, err)
	}
	if next, _ := s.Now(); !given.Less(next) {
		t.Fatalf("the clock did not move past a received HLC: %v after %v", next, given)
	}
	ahead := fsm.Event{HLC: hlc.Timestamp{WallMs: wall + 10_000}}
	if err := s.Received(&ahead); err == nil {
		t.Fatal("an HLC beyond the max offset was accepted")
	}

	after := hlc.Timestamp{WallMs: wall + 200, Logical: 5, Node: 3}
	planned := []fsm.Event{{ID: fsm.EventID{1}}, {ID: fsm.EventID{2}}}
	if err := s.Planned(planned, after); err != nil {
		t.Fatal(err)
	}
	if planned[0].ID != (fsm.EventID{1}) || !after.Less(planned[0].HLC) || !planned[0].HLC.Less(planned[1].HLC) ||
		planned[1].Node != "m1" || planned[1].Region != "use1" {
		t.Fatalf("planned: %+v", planned)
	}
}

func TestStamper_CreatedKeepsTheJobIDsHLC(t *testing.T) {
	wall := int64(1_700_000_000_000)
	s := testStamper(t, &wall)
	ts, err := s.Now()
	if err != nil {
		t.Fatal(err)
	}
	e := fsm.Event{Node: "other", Region: "euw1"}
	s.Created(&e, ts)
	if e.HLC != ts || e.Node != "m1" || e.Region != "use1" {
		t.Fatalf("created: %+v", e)
	}
}

// NewEventID's ids carry the wall clock's millisecond first (so a node's
// ids increase and the ledger's id index appends) and still differ within
// one millisecond.
func TestNewEventID_TimeOrdered(t *testing.T) {
	before := time.Now().UnixMilli()
	seen := make(map[fsm.EventID]bool)
	var prev fsm.EventID
	for i := range 1000 {
		id := NewEventID()
		if seen[id] || id.IsZero() {
			t.Fatalf("id %d: %s repeated or zero", i, id)
		}
		seen[id] = true
		if ms := fsm.EventIDTime(id); ms < before || ms > time.Now().UnixMilli() {
			t.Fatalf("id %s carries ms %d, outside [%d, now]", id, ms, before)
		}
		if fsm.EventIDTime(id) < fsm.EventIDTime(prev) {
			t.Fatalf("id %s orders before the previous %s", id, prev)
		}
		prev = id
	}
}

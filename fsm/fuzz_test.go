package fsm_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// Every decoder: never panics, allocates in proportion to its input, and
// accepts only canonical bytes: encode(decode(b)) == b, and then
// decode(encode(x)) == x.

func FuzzDecodeEvent(f *testing.F) {
	ext := fsmtest.SampleEvents()[0]
	ext.Body = &fsm.JobCreated{Spec: fsmtest.ExtendedSpec("acme", "use1"), AssignedRegions: []string{"use1"}}
	for _, e := range append(fsmtest.SampleEvents(), ext) {
		b, err := e.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var e fsm.Event
		var err error
		checkAllocBound(t, len(data), func() { e, err = fsm.DecodeEvent(data) })
		if err != nil {
			return
		}
		again, err := e.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded event does not encode: %v", err)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("encode(decode(b)) != b\n b     %x\n again %x", data, again)
		}
		e2, err := fsm.DecodeEvent(again)
		if err != nil || !reflect.DeepEqual(e2, e) {
			t.Fatalf("decode(encode(x)) != x: %v", err)
		}
		_ = e.Validate() // must not panic on anything that decodes
	})
}

func FuzzDecodeBatch(f *testing.F) {
	samples := fsmtest.SampleEvents()
	for i := range samples {
		b, err := fsm.EncodeBatch(samples[:i])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var events []fsm.Event
		var err error
		checkAllocBound(t, len(data), func() { events, err = fsm.DecodeBatch(data) })
		if err != nil {
			return
		}
		again, err := fsm.EncodeBatch(events)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("encode(decode(b)) != b: %v", err)
		}
	})
}

func FuzzDecodeSnapshotHeader(f *testing.F) {
	for _, h := range []fsm.SnapshotHeader{{Kind: fsm.SnapshotKindRecords, AppliedIndex: 42}, {Kind: fsm.SnapshotKindStoreImage}} {
		b, _ := h.AppendBinary(nil)
		f.Add(b)
	}
	f.Add(make([]byte, fsm.SnapshotHeaderLen))
	f.Fuzz(func(t *testing.T, data []byte) {
		var h fsm.SnapshotHeader
		var err error
		checkAllocBound(t, len(data), func() { h, err = fsm.DecodeSnapshotHeader(data) })
		if err != nil {
			return
		}
		again, _ := h.AppendBinary(nil)
		if !bytes.Equal(again, data) {
			t.Fatalf("encode(decode(b)) != b\n b     %x\n again %x", data, again)
		}
	})
}

func FuzzParseJobID(f *testing.F) {
	for _, s := range []string{"use1-1704931200000-gate42-00001", "a-0-b-99999", "use1--gate-00001", "x-1-y-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := fsm.ParseJobID(s)
		if err != nil {
			return
		}
		if id.String() != s {
			t.Fatalf("ParseJobID(%q).String() = %q", s, id.String())
		}
		again, err := fsm.ParseJobID(id.String())
		if err != nil || again != id {
			t.Fatalf("parse(string(x)) != x: %+v %v", again, err)
		}
	})
}

// fuzzRecords builds a ledger with every kind of record and returns their
// encodings, for the record fuzzers' corpora.
func fuzzRecords(f *testing.F) (events, jobs, workflows, workers, marks [][]byte) {
	led, st := fsmtest.NewLedger(f, newStore)
	fsmtest.Drive(f, 3, led, fsmtest.NewModel(), 400, 0)
	err := st.View(func(tx fsm.ReadTx) error {
		_ = tx.ChainEvents("acme", 0, func(se *fsm.StoredEvent) error {
			b, err := fsm.AppendStoredEvent(nil, se)
			events = append(events, b)
			return err
		})
		_ = tx.ChainEvents("", 0, func(se *fsm.StoredEvent) error { // worker events and forward marks
			b, err := fsm.AppendStoredEvent(nil, se)
			events = append(events, b)
			return err
		})
		_ = tx.ForwardMarks(func(_ string, seq uint64) error {
			b, err := fsm.AppendForwardMark(nil, seq)
			marks = append(marks, b)
			return err
		})
		_ = tx.Jobs("", "", func(s *fsm.JobState) error {
			b, err := fsm.AppendJobState(nil, s)
			jobs = append(jobs, b)
			return err
		})
		_ = tx.Workflows("", func(w *fsm.WorkflowState) error {
			b, err := fsm.AppendWorkflowState(nil, w)
			workflows = append(workflows, b)
			return err
		})
		return tx.Workers(func(w *fsm.WorkerState) error {
			b, err := fsm.AppendWorkerState(nil, w)
			workers = append(workers, b)
			return err
		})
	})
	if err != nil {
		f.Fatal(err)
	}
	if len(marks) == 0 {
		f.Fatal("the fixture holds no forward mark")
	}
	return events, jobs, workflows, workers, marks
}

func FuzzDecodeRecords(f *testing.F) {
	events, jobs, workflows, workers, marks := fuzzRecords(f)
	for kind, set := range [][][]byte{events, jobs, workflows, workers, marks} {
		for i, b := range set {
			if i < 20 || kind == 0 && len(set)-i <= 20 { // the empty tenant's events come last
				f.Add(uint8(kind), b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		var again []byte
		var err error
		checkAllocBound(t, len(data), func() {
			switch kind % 5 {
			case 0:
				var se *fsm.StoredEvent
				if se, err = fsm.DecodeStoredEvent(data); err == nil {
					again, err = fsm.AppendStoredEvent(nil, se)
				}
			case 1:
				var s *fsm.JobState
				if s, err = fsm.DecodeJobState(data); err == nil {
					again, err = fsm.AppendJobState(nil, s)
				}
			case 2:
				var w *fsm.WorkflowState
				if w, err = fsm.DecodeWorkflowState(data); err == nil {
					again, err = fsm.AppendWorkflowState(nil, w)
				}
			case 3:
				var w *fsm.WorkerState
				if w, err = fsm.DecodeWorkerState(data); err == nil {
					again, err = fsm.AppendWorkerState(nil, w)
				}
			default:
				var seq uint64
				if seq, err = fsm.DecodeForwardMark(data); err == nil {
					again, err = fsm.AppendForwardMark(nil, seq)
				}
			}
		})
		if err == nil && !bytes.Equal(again, data) {
			t.Fatalf("record kind %d: encode(decode(b)) != b\n b     %x\n again %x", kind%5, data, again)
		}
	})
}

// FuzzRestore feeds arbitrary bytes to Restore: it never panics, and a
// refused snapshot leaves the ledger as it was.
func FuzzRestore(f *testing.F) {
	src := newLedger(f)
	fsmtest.Drive(f, 5, src, fsmtest.NewModel(), 60, 0)
	mark := fsmtest.NewEvent(fsmtest.ID(1<<40), "", "", "use1", "mgr1", fsmtest.TS(1_800_000_000_000, 0, 1), 0,
		&fsm.ForwardMark{Marks: []fsm.ForwardPosition{{Tenant: "acme", Seq: 3}, {Tenant: "globex", Seq: 1}}})
	if r, err := src.Apply(src.AppliedIndex()+1, []fsm.Event{mark}); err != nil || r[0].Outcome != fsm.OutcomeApplied {
		f.Fatalf("forward mark: %+v %v", r, err)
	}
	var snap bytes.Buffer
	if err := src.Snapshot(&snap); err != nil {
		f.Fatal(err)
	}
	f.Add(snap.Bytes())
	f.Add(snap.Bytes()[:fsm.SnapshotHeaderLen])
	f.Fuzz(func(t *testing.T, data []byte) {
		led := newLedger(t)
		if err := led.Restore(bytes.NewReader(data)); err != nil {
			if d, _, _ := led.Digest(); led.AppliedIndex() != 0 || d != emptyDigest(t) {
				t.Fatal("a refused restore changed the ledger")
			}
			return
		}
		var again bytes.Buffer
		if err := led.Snapshot(&again); err != nil || !bytes.Equal(again.Bytes(), data) {
			t.Fatalf("an accepted snapshot does not snapshot back to itself: %v", err)
		}
	})
}

func emptyDigest(t *testing.T) fsm.Hash {
	d, _, err := newLedger(t).Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// FuzzEventJSON: the API decoder never panics, and a valid event it
// accepts survives a JSON round trip unchanged.
func FuzzEventJSON(f *testing.F) {
	for _, e := range fsmtest.SampleEvents() {
		b, err := json.Marshal(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"id":"53747261746100000000000000000001","type":"ForwardMark","region":"use1","node":"m1",` +
		`"hlc":"1:0:1","fence":0,"body":{"marks":[{"tenant":"b","seq":2},{"tenant":"a","seq":0}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var e fsm.Event
		if err := json.Unmarshal(data, &e); err != nil || e.Validate() != nil {
			return
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("a valid decoded event does not encode: %v", err)
		}
		var again fsm.Event
		if err := json.Unmarshal(b, &again); err != nil || !reflect.DeepEqual(again, e) {
			t.Fatalf("JSON round trip changed the event: %v\n%s", err, b)
		}
	})
}

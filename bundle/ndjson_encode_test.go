package bundle

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/hlc"
)

// legacyLine is a line as the legacy writer wrote it: json.Marshal of
// ndjsonLine, and a newline.
func legacyLine(t testing.TB, se *fsm.StoredEvent, prev fsm.Hash) []byte {
	t.Helper()
	p := genesisText
	if se.Seq > 1 {
		p = hex.EncodeToString(prev[:])
	}
	b, err := json.Marshal(ndjsonLine{Seq: se.Seq, PrevLink: p, Link: se.Link, BodyHash: se.BodyHash, Event: se.Event})
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// checkLine fails t unless lineEncoder writes se's line as encoding/json
// does.
func checkLine(t testing.TB, enc *lineEncoder, se *fsm.StoredEvent, prev fsm.Hash) {
	t.Helper()
	got, err := enc.appendLine(nil, se, &prev)
	if err != nil {
		t.Fatal(err)
	}
	if want := legacyLine(t, se, prev); !bytes.Equal(got, want) {
		t.Fatalf("line of %+v:\n got %s\nwant %s", se.Event, got, want)
	}
}

// TestLineEncoder_EqualsEncodingJSON: every event fsmtest.Gen makes
// (every type, governance and workflows included), with odd strings in
// the envelope and the body, seqs 1 and over, writes json.Marshal's bytes.
func TestLineEncoder_EqualsEncodingJSON(t *testing.T) {
	enc := newLineEncoder()
	r := rand.New(rand.NewPCG(7, 7))
	types := map[fsm.EventType]int{}
	for _, g := range []*fsmtest.Gen{fsmtest.NewGen(1), fsmtest.NewGovGen(2)} {
		for i := range 3000 {
			e := g.Next()
			if i%3 == 0 {
				e.JobID, e.Tenant, e.Region, e.Node = oddString(r, 4), oddString(r, 4), oddString(r, 4), oddString(r, 4)
			}
			switch b := e.Body.(type) {
			case *fsm.JobCancellationRequested:
				b.Reason = oddString(r, 30)
			case *fsm.JobProgressReported:
				if i%2 == 0 {
					b.Region = oddString(r, 3)
					for k := range b.Stats {
						b.Stats[k].Name = oddString(r, 4)
					}
				}
			}
			types[e.Type]++
			se := &fsm.StoredEvent{Event: e, Seq: r.Uint64N(3), Link: fsm.Hash{byte(i)}, BodyHash: fsm.Hash{1, byte(i)}}
			checkLine(t, enc, se, fsm.Hash{2, byte(i)})
		}
	}
	if types[fsm.TypeJobProgressReported] == 0 {
		t.Fatal("no progress reports, whose body is written by hand")
	}
	t.Logf("%d event types, %d progress reports", len(types), types[fsm.TypeJobProgressReported])
}

// TestAppendProgress_KnowsEveryField: appendProgress writes a progress
// report's fields by hand, so a field added to the type (or a tag
// changed) must fail here rather than go missing from NDJSON.
func TestAppendProgress_KnowsEveryField(t *testing.T) {
	want := []string{`Region string json:"region"`, `Completed uint64 json:"completed"`, `Failed uint64 json:"failed"`,
		`Stats fsm.Stats json:"stats,omitempty"`, `Done bool json:"done,omitempty"`}
	typ := reflect.TypeFor[fsm.JobProgressReported]()
	var got []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		got = append(got, fmt.Sprintf("%s %s %s", f.Name, f.Type, f.Tag))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("fsm.JobProgressReported's fields are %q, appendProgress writes %q: update it", got, want)
	}
	if typ := reflect.TypeFor[fsm.Stat](); typ.NumField() != 2 || typ.Field(1).Type.Kind() != reflect.Uint64 {
		t.Fatal("fsm.Stat changed: update appendProgress")
	}
}

// FuzzAppendProgress: for any region, stat names and values, a progress
// report's line is encoding/json's.
func FuzzAppendProgress(f *testing.F) {
	f.Add("use1", "requests", "<b>&\u2028\xff", uint64(1), uint64(1<<63), uint64(0), true, 2)
	f.Add("", "", "", uint64(0), uint64(0), uint64(0), false, 0)
	f.Fuzz(func(t *testing.T, region, name1, name2 string, completed, failed, value uint64, done bool, stats int) {
		p := &fsm.JobProgressReported{Region: region, Completed: completed, Failed: failed, Done: done}
		if stats%3 == 1 {
			p.Stats = fsm.Stats{}
		}
		if stats%3 == 2 {
			p.Stats = fsm.Stats{{Name: name1, Value: value}, {Name: name2, Value: failed}}
		}
		se := &fsm.StoredEvent{Seq: 2, Event: fsm.Event{Type: fsm.TypeJobProgressReported, JobID: name1, Region: region, Body: p}}
		checkLine(t, newLineEncoder(), se, fsm.Hash{})
	})
}

// TestAppendJSONString_EqualsEncodingJSON: every piece json.Marshal
// escapes or replaces, alone and amid plain text.
func TestAppendJSONString_EqualsEncodingJSON(t *testing.T) {
	for _, p := range append(oddPieces, "", "plain-name_1.x", "use1-1700000000000-gate1-00001") {
		for _, s := range []string{p, "x" + p + "y"} {
			want, _ := json.Marshal(s)
			if got := appendJSONString([]byte("~"), s); string(got) != "~"+string(want) {
				t.Errorf("%q: got %s, want %s", s, got[1:], want)
			}
		}
	}
}

// FuzzLineEncoder: for any strings in an event's envelope and body, and
// any chain fields, lineEncoder writes what encoding/json writes.
func FuzzLineEncoder(f *testing.F) {
	f.Add("use1-1700000000000-gate1-00001", "acme", "use1", "gate1", "stop <now> & \u2028", "alice", uint64(2), int64(1_700_000_000_000), uint32(3), uint32(1), uint64(9))
	f.Add("", "", "\xff", "\x00\x1f\x7f", "\"\\\n\t\b\f", "日本😀\ufffd", uint64(1), int64(-1), uint32(0), uint32(0), uint64(0))
	f.Fuzz(func(t *testing.T, jobID, tenant, region, node, reason, requestor string, seq uint64, wall int64, logical, nodeID uint32, fence uint64) {
		se := &fsm.StoredEvent{Seq: seq, Link: fsm.Hash{byte(seq)}, BodyHash: fsm.Hash{byte(fence)}, Event: fsm.Event{
			ID: fsm.EventID{byte(wall)}, Type: fsm.TypeJobCancellationRequested, JobID: jobID, Tenant: tenant, Region: region, Node: node,
			HLC: hlc.Timestamp{WallMs: wall, Logical: logical, Node: nodeID}, Fence: fence,
			Body: &fsm.JobCancellationRequested{Reason: reason, Requestor: requestor}}}
		checkLine(t, newLineEncoder(), se, fsm.Hash{byte(logical)})
	})
}

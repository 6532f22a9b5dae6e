package fsm_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// markEv returns a ForwardMark event with id n (no job, no tenant).
func markEv(n uint64, marks ...fsm.ForwardPosition) fsm.Event {
	return fsmtest.NewEvent(fsmtest.ID(n), "", "", "use1", "mgr1", fsmtest.TS(1_700_000_000_000+int64(n), 0, 1), 0,
		&fsm.ForwardMark{Marks: marks})
}

func pos(tenant string, seq uint64) fsm.ForwardPosition {
	return fsm.ForwardPosition{Tenant: tenant, Seq: seq}
}

func marksOf(t *testing.T, led *fsm.Ledger) map[string]uint64 {
	t.Helper()
	m, err := led.ForwardMarks()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A mark raises each tenant's position and never lowers it; every valid
// mark is applied and linked into the empty tenant's chain, a lower one
// too; a repeated id is a duplicate.
func TestForwardMark_RaisesAndNeverLowers(t *testing.T) {
	led := newLedger(t)
	steps := []struct {
		event fsm.Event
		want  fsm.Outcome
		marks map[string]uint64
	}{
		{markEv(1, pos("acme", 5)), applied, map[string]uint64{"acme": 5}},
		{markEv(2, pos("acme", 9), pos("globex", 2)), applied, map[string]uint64{"acme": 9, "globex": 2}},
		{markEv(3, pos("acme", 4), pos("globex", 7)), applied, map[string]uint64{"acme": 9, "globex": 7}},
		{markEv(4, pos("acme", 1)), applied, map[string]uint64{"acme": 9, "globex": 7}},
		{markEv(2, pos("acme", 9), pos("globex", 2)), fsm.OutcomeDuplicate, map[string]uint64{"acme": 9, "globex": 7}},
	}
	for i, s := range steps {
		r, err := led.Apply(uint64(i+1), []fsm.Event{s.event})
		if err != nil {
			t.Fatal(err)
		}
		if r[0].Outcome != s.want || r[0].Err != nil {
			t.Fatalf("step %d: %s %v, want %s", i, r[0].Outcome, r[0].Err, s.want)
		}
		if got := marksOf(t, led); !maps.Equal(got, s.marks) {
			t.Fatalf("step %d: marks %v, want %v", i, got, s.marks)
		}
	}
	if h, err := led.VerifyChain(""); err != nil || h.Seq != 4 {
		t.Fatalf("chain of the empty tenant: %+v %v, want 4 events", h, err)
	}
	if seq, err := led.ForwardMark("acme"); err != nil || seq != 9 {
		t.Fatalf("mark of acme %d %v", seq, err)
	}
	if seq, err := led.ForwardMark("initech"); err != nil || seq != 0 {
		t.Fatalf("mark of a tenant without one %d %v", seq, err)
	}
	// In one batch, the later of two marks reads the earlier's write.
	if _, err := led.Apply(10, []fsm.Event{markEv(5, pos("zeta", 3)), markEv(6, pos("zeta", 2)), markEv(7, pos("zeta", 8))}); err != nil {
		t.Fatal(err)
	}
	if seq, _ := led.ForwardMark("zeta"); seq != 8 {
		t.Fatalf("mark of zeta %d after 3, 2, 8 in one batch", seq)
	}
	conflict := markEv(1, pos("acme", 6))
	if r, _ := led.Apply(11, []fsm.Event{conflict}); r[0].Outcome != rejected || !errors.Is(r[0].Err, fsm.ErrEventConflict) {
		t.Fatalf("id reused with other marks: %s %v", r[0].Outcome, r[0].Err)
	}
}

func TestForwardMark_InvalidIsRejectedAndChangesNothing(t *testing.T) {
	many := make([]fsm.ForwardPosition, fsm.MaxForwardMarks+1)
	for i := range many {
		many[i] = pos(fmt.Sprintf("t%05d", i), 1)
	}
	withJob := markEv(9, pos("acme", 1))
	withJob.JobID = fsmtest.SampleJobID
	withTenant := markEv(9, pos("acme", 1))
	withTenant.Tenant = "acme"
	for _, tc := range []struct {
		name  string
		event fsm.Event
		field string
		limit bool
	}{
		{"no marks", markEv(9), "marks", false},
		{"tenants out of order", markEv(9, pos("globex", 1), pos("acme", 1)), "marks", false},
		{"tenant twice", markEv(9, pos("acme", 1), pos("acme", 2)), "marks", false},
		{"seq 0", markEv(9, pos("acme", 0)), "marks.seq", false},
		{"empty tenant", markEv(9, pos("", 1)), "marks.tenant", false},
		{"tenant not a name", markEv(9, pos("ac me", 1)), "marks.tenant", false},
		{"long tenant", markEv(9, pos(strings.Repeat("a", fsm.MaxNameBytes+1), 1)), "marks.tenant", true},
		{"too many marks", markEv(9, many...), "marks", true},
		{"a job id", withJob, "job_id", false},
		{"a tenant", withTenant, "job_id", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.event.Validate()
			var fe *fsm.FieldError
			var le *fsm.LimitError
			switch {
			case errors.As(err, &le):
				if !tc.limit || le.Field != tc.field {
					t.Fatalf("limit error on %q, want field %q (limit %v)", le.Field, tc.field, tc.limit)
				}
			case errors.As(err, &fe):
				if tc.limit || fe.Field != tc.field {
					t.Fatalf("field %q (%v), want %q", fe.Field, err, tc.field)
				}
			default:
				t.Fatalf("got %v, want an invalid %s", err, tc.field)
			}
			led := newLedger(t)
			if _, err := led.Apply(1, []fsm.Event{markEv(1, pos("acme", 3))}); err != nil {
				t.Fatal(err)
			}
			r, err := led.Apply(2, []fsm.Event{tc.event})
			if err != nil || r[0].Outcome != rejected || !errors.Is(r[0].Err, fsm.ErrInvalidEvent) {
				t.Fatalf("apply: %+v %v, want rejected as invalid", r, err)
			}
			if got := marksOf(t, led); !maps.Equal(got, map[string]uint64{"acme": 3}) {
				t.Fatalf("a rejected mark changed the marks: %v", got)
			}
			if h, _ := led.ChainHead(""); h.Seq != 1 {
				t.Fatalf("a rejected mark was stored: chain at %d", h.Seq)
			}
		})
	}
}

// TestForwardMark_BinaryGolden pins the body of fsm/DESIGN.md: list of
// (str tenant, uvarint seq).
func TestForwardMark_BinaryGolden(t *testing.T) {
	b, err := fsm.AppendBody(nil, &fsm.ForwardMark{Marks: []fsm.ForwardPosition{pos("acme", 12), pos("globex", 300)}})
	if err != nil {
		t.Fatal(err)
	}
	want := "02" + // count
		"04" + hex.EncodeToString([]byte("acme")) + "0c" +
		"06" + hex.EncodeToString([]byte("globex")) + "ac02"
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("body\n got  %s\n want %s", got, want)
	}
	e, err := fsm.DecodeEvent(mustBinary(t, markEv(1, pos("acme", 12))))
	if err != nil || e.Type != fsm.TypeForwardMark || e.Type.String() != "ForwardMark" || uint8(e.Type) != 66 {
		t.Fatalf("decoded %+v %v", e, err)
	}
}

func mustBinary(t *testing.T, e fsm.Event) []byte {
	t.Helper()
	b, err := e.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The decoder checks the count against the limit and the input before
// allocating; the limit fits the body limit with 52-byte tenants.
func TestForwardMark_DecoderBoundsAndBodyLimit(t *testing.T) {
	e := markEv(1, pos("acme", 1))
	b := mustBinary(t, e)
	bodyAt := len(b) - 7 // count (1) + "acme" (5) + seq (1)
	over := binary.AppendUvarint(nil, fsm.MaxForwardMarks+1)
	lying := append(bytes.Clone(b[:bodyAt-4]), byte(len(over)), 0, 0, 0)
	if _, err := fsm.DecodeEvent(append(lying, over...)); !errors.Is(err, fsm.ErrLimit) {
		t.Fatalf("count over the limit: %v, want ErrLimit", err)
	}
	claim := binary.AppendUvarint(nil, fsm.MaxForwardMarks)
	lying = append(bytes.Clone(b[:bodyAt-4]), byte(len(claim)), 0, 0, 0)
	if _, err := fsm.DecodeEvent(append(lying, claim...)); !errors.Is(err, fsm.ErrMalformed) {
		t.Fatalf("count beyond the input: %v, want ErrMalformed", err)
	}
	marks := func(nameLen int) *fsm.ForwardMark {
		m := &fsm.ForwardMark{Marks: make([]fsm.ForwardPosition, fsm.MaxForwardMarks)}
		for i := range m.Marks {
			m.Marks[i] = pos(fmt.Sprintf("%0*d", nameLen, i), 1<<63)
		}
		return m
	}
	if _, err := fsm.AppendBody(nil, marks(52)); err != nil {
		t.Fatalf("1,024 marks of 52-byte tenants: %v", err)
	}
	if _, err := fsm.AppendBody(nil, marks(53)); !errors.Is(err, fsm.ErrLimit) {
		t.Fatalf("1,024 marks of 53-byte tenants: %v, want the body limit", err)
	}
}

func TestForwardMark_JSONShape(t *testing.T) {
	e := markEv(2, pos("acme", 12))
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"53747261746100000000000000000002","type":"ForwardMark","region":"use1","node":"mgr1",` +
		`"hlc":"1700000000002:0:1","fence":0,"body":{"marks":[{"tenant":"acme","seq":12}]}}`
	if string(b) != want {
		t.Fatalf("JSON\n got  %s\n want %s", b, want)
	}
	var got fsm.Event
	if err := json.Unmarshal(b, &got); err != nil || !reflect.DeepEqual(got, e) {
		t.Fatalf("round trip %+v %v", got, err)
	}
}

// markStream builds a record-stream snapshot (fsm/DESIGN.md §8) of no
// chains and no jobs from raw records, with a correct trailer.
func markStream(t *testing.T, records ...[]byte) []byte {
	t.Helper()
	b, _ := fsm.SnapshotHeader{Kind: fsm.SnapshotKindRecords, AppliedIndex: 3}.AppendBinary(nil)
	for _, r := range records {
		b = append(b, r...)
	}
	d, _, err := newLedger(t).Digest() // no jobs
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(records)))
	b = append(b, d[:]...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

func markRecord(t *testing.T, tenant string, seq uint64) []byte {
	t.Helper()
	payload := binary.AppendUvarint(nil, uint64(len(tenant)))
	payload = append(payload, tenant...)
	payload, err := fsm.AppendForwardMark(payload, seq)
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.AppendUvarint([]byte{6}, uint64(len(payload))), payload...)
}

// Forward marks travel in snapshots as records of type 6, after the
// workers, in tenant order; Restore refuses them out of order, with seq
// 0, with a tenant that is not a name, or before a worker record.
func TestSnapshot_CarriesForwardMarks(t *testing.T) {
	led := newLedger(t)
	if _, err := led.Apply(1, []fsm.Event{markEv(1, pos("acme", 4), pos("globex", 9))}); err != nil {
		t.Fatal(err)
	}
	var snap bytes.Buffer
	if err := led.SnapshotRecords(&snap); err != nil {
		t.Fatal(err)
	}
	restored := newLedger(t)
	if err := restored.Restore(bytes.NewReader(snap.Bytes())); err != nil {
		t.Fatal(err)
	}
	if got := marksOf(t, restored); !maps.Equal(got, map[string]uint64{"acme": 4, "globex": 9}) {
		t.Fatalf("restored marks %v", got)
	}
	tail := append(markRecord(t, "acme", 4), markRecord(t, "globex", 9)...)
	if !bytes.Contains(snap.Bytes(), tail) {
		t.Fatal("snapshot does not end its records with the two forward mark records")
	}

	good := markStream(t, markRecord(t, "acme", 1), markRecord(t, "globex", 2))
	if err := newLedger(t).Restore(bytes.NewReader(good)); err != nil {
		t.Fatalf("a hand-built stream of marks: %v", err)
	}
	worker, err := fsm.AppendWorkerState(nil, &fsm.WorkerState{ID: "w1", Region: "use1", Capacity: 1, Active: true})
	if err != nil {
		t.Fatal(err)
	}
	workerRecord := append(binary.AppendUvarint([]byte{5}, uint64(len(worker))), worker...)
	for _, tc := range []struct {
		name    string
		records [][]byte
	}{
		{"tenants out of order", [][]byte{markRecord(t, "globex", 1), markRecord(t, "acme", 1)}},
		{"tenant twice", [][]byte{markRecord(t, "acme", 1), markRecord(t, "acme", 2)}},
		{"seq 0", [][]byte{markRecord(t, "acme", 0)}},
		{"empty tenant", [][]byte{markRecord(t, "", 1)}},
		{"tenant not a name", [][]byte{markRecord(t, "a/b", 1)}},
		{"mark before a worker", [][]byte{markRecord(t, "acme", 1), workerRecord}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := newLedger(t)
			if _, err := target.Apply(1, []fsm.Event{markEv(1, pos("zeta", 5))}); err != nil {
				t.Fatal(err)
			}
			if err := target.Restore(bytes.NewReader(markStream(t, tc.records...))); !errors.Is(err, fsm.ErrSnapshot) {
				t.Fatalf("got %v, want ErrSnapshot", err)
			}
			if got := marksOf(t, target); !maps.Equal(got, map[string]uint64{"zeta": 5}) || target.AppliedIndex() != 1 {
				t.Fatalf("a refused restore changed the ledger: %v", got)
			}
		})
	}
}

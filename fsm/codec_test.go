package fsm_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

func TestSampleEvents_AreValid(t *testing.T) {
	events := fsmtest.SampleEvents()
	if len(events) != len(fsm.EventTypes()) {
		t.Fatalf("%d samples for %d event types", len(events), len(fsm.EventTypes()))
	}
	for _, e := range events {
		if err := e.Validate(); err != nil {
			t.Errorf("%s: %v", e.Type, err)
		}
	}
}

func TestEventBinary_RoundTripsEveryType(t *testing.T) {
	for _, e := range fsmtest.SampleEvents() {
		t.Run(e.Type.String(), func(t *testing.T) {
			b, err := e.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			got, err := fsm.DecodeEvent(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, e) {
				t.Fatalf("decode(encode(x)) = %+v, want %+v", got, e)
			}
		})
	}
}

// A store handed the encoded body (fsm.EncodedEventTx) writes the same
// record as one that encodes it again.
func TestAppendStoredEventBody_EqualsAppendStoredEvent(t *testing.T) {
	for _, e := range fsmtest.SampleEvents() {
		body, err := fsm.AppendBody(nil, e.Body)
		if err != nil {
			t.Fatal(err)
		}
		se := &fsm.StoredEvent{Event: e, Seq: 9, BodyHash: fsm.Hash{1}, Link: fsm.Hash{2}}
		want, err := fsm.AppendStoredEvent(nil, se)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fsm.AppendStoredEventBody([]byte{}, se, body)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: record from the encoded body differs (%v)", e.Type, err)
		}
	}
}

func TestEventJSON_RoundTripsEveryType(t *testing.T) {
	for _, e := range fsmtest.SampleEvents() {
		t.Run(e.Type.String(), func(t *testing.T) {
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			var got fsm.Event
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if !reflect.DeepEqual(got, e) {
				t.Fatalf("JSON round trip of %s = %+v, want %+v", b, got, e)
			}
		})
	}
}

func TestEventJSON_MatchesTheAPIShape(t *testing.T) {
	e := fsmtest.SampleEvents()[1]
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"53747261746100000000000000000002","type":"JobAccepted","job_id":"use1-1704931200000-gate42-00001",` +
		`"tenant":"acme","region":"use1","node":"gate42","hlc":"1704931200002:2:1","fence":2,` +
		`"body":{"region":"use1","worker_count":12}}`
	if string(b) != want {
		t.Fatalf("JSON\n got  %s\n want %s", b, want)
	}
}

func TestEventJSON_RefusesUnknownFieldsAndTypes(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"unknown envelope field", `{"id":"53747261746100000000000000000002","type":"JobAccepted","extra":1,"body":{}}`},
		{"unknown body field", `{"id":"53747261746100000000000000000002","type":"JobAccepted","body":{"regions":"x"}}`},
		{"unknown type", `{"id":"53747261746100000000000000000002","type":"JobExploded","body":{}}`},
		{"short id", `{"id":"5374","type":"JobAccepted","body":{}}`},
		{"seq set by a client", `{"id":"53747261746100000000000000000002","type":"JobAccepted","seq":3,"body":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e fsm.Event
			if err := json.Unmarshal([]byte(tc.in), &e); err == nil {
				t.Fatalf("accepted %s", tc.in)
			}
		})
	}
}

// TestEventBinary_Golden pins the event encoding of fsm/DESIGN.md. If it
// fails, the wire format changed: that needs a new EventVersion, not a new
// golden value.
func TestEventBinary_Golden(t *testing.T) {
	e := fsmtest.NewEvent(fsmtest.ID(2), "use1-1704931200000-gate42-00001", "acme", "use1", "gate42",
		fsmtest.TS(1704931200002, 2, 1), 3, &fsm.JobAccepted{Region: "use1", WorkerCount: 12})
	b, err := e.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := "01" + "02" + // version, type
		"53747261746100000000000000000002" + // id
		"028cd1f58c010000" + "02000000" + "01000000" + // hlc: wall, logical, node (LE)
		"03" + // fence
		"1f" + hex.EncodeToString([]byte("use1-1704931200000-gate42-00001")) +
		"04" + hex.EncodeToString([]byte("acme")) +
		"04" + hex.EncodeToString([]byte("use1")) +
		"06" + hex.EncodeToString([]byte("gate42")) +
		"06000000" + // body length (LE)
		"04" + hex.EncodeToString([]byte("use1")) + "0c" // body: region, worker_count
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("encoding\n got  %s\n want %s", got, want)
	}
}

// TestChainLink_IsTheDesignFormula recomputes a link by hand:
// SHA-256(prev ‖ hlc ‖ job_id ‖ type ‖ SHA-256(body)), prev "genesis" first.
func TestChainLink_IsTheDesignFormula(t *testing.T) {
	e := fsmtest.SampleEvents()[1]
	body, err := fsm.AppendBody(nil, e.Body)
	if err != nil {
		t.Fatal(err)
	}
	bodyHash := sha256.Sum256(body)
	input := []byte("genesis")
	input = e.HLC.AppendBinary(input)
	input = append(input, e.JobID...)
	input = append(input, byte(fsm.TypeJobAccepted))
	input = append(input, bodyHash[:]...)
	first := fsm.ChainLink(fsm.ChainHead{}, &e, bodyHash)
	if want := sha256.Sum256(input); first != fsm.Hash(want) {
		t.Fatalf("first link %s, want %x", first, want)
	}
	second := fsm.ChainLink(fsm.ChainHead{Seq: 1, Link: first}, &e, bodyHash)
	input = append(first[:], input[len("genesis"):]...)
	if want := sha256.Sum256(input); second != fsm.Hash(want) {
		t.Fatalf("second link %s, want %x", second, want)
	}
}

func TestDecodeEvent_RejectsNonCanonicalBytes(t *testing.T) {
	good, err := fsmtest.SampleEvents()[2].MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mutate func([]byte) []byte
	}{
		{"trailing byte", func(b []byte) []byte { return append(b, 0) }},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }},
		{"unknown version", func(b []byte) []byte { b[0] = 2; return b }},
		{"unknown type", func(b []byte) []byte { b[1] = 99; return b }},
		{"bool that is not 0 or 1", func(b []byte) []byte { b[len(b)-1] = 2; return b }},
		{"non-minimal fence varint", func(b []byte) []byte {
			return append(append(b[:34:34], 0x81, 0x00), b[35:]...) // fence 1 as two bytes
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fsm.DecodeEvent(tc.mutate(bytes.Clone(good)))
			if !errors.Is(err, fsm.ErrMalformed) {
				t.Fatalf("got %v, want ErrMalformed", err)
			}
		})
	}
}

func TestBatch_RoundTrips(t *testing.T) {
	events := fsmtest.SampleEvents()
	b, err := fsm.EncodeBatch(events)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fsm.DecodeBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, events) {
		t.Fatal("batch round trip differs")
	}
	if b[0] != fsm.BatchVersion {
		t.Fatalf("first byte %d, want the batch version", b[0])
	}
}

func TestLimits_AreCheckedByEncodersAndDecoders(t *testing.T) {
	progress := fsmtest.SampleEvents()[2]
	big := progress
	big.Body = &fsm.JobFailed{Error: strings.Repeat("x", fsm.MaxTextBytes+1)}
	big.Type = fsm.TypeJobFailed
	many := make([]fsm.Event, fsm.MaxBatchEvents+1)
	for i := range many {
		many[i] = progress
	}
	manyRegions := fsmtest.SampleEvents()[0]
	spec := manyRegions.Body.(*fsm.JobCreated).Spec
	for i := range fsm.MaxRegionsPerJob + 1 {
		spec.Regions = append(spec.Regions, "r"+strings.Repeat("a", i%10)+string(rune('a'+i)))
	}
	manyRegions.Body = &fsm.JobCreated{Spec: spec, AssignedRegions: []string{"use1"}}
	manyWorkflows := fsmtest.SampleEvents()[0]
	spec = manyWorkflows.Body.(*fsm.JobCreated).Spec
	spec.Workflows = make([]fsm.WorkflowSpec, fsm.MaxWorkflowsPerJob+1)
	manyWorkflows.Body = &fsm.JobCreated{Spec: spec, AssignedRegions: []string{"use1"}}
	hugeBody := fsmtest.SampleEvents()[0]
	spec = hugeBody.Body.(*fsm.JobCreated).Spec
	spec.Workflows = make([]fsm.WorkflowSpec, fsm.MaxWorkflowsPerJob)
	for i := range spec.Workflows {
		spec.Workflows[i] = fsm.WorkflowSpec{Name: strings.Repeat("n", fsm.MaxNameBytes), Count: 1, Duration: 1}
	}
	hugeBody.Body = &fsm.JobCreated{Spec: spec, AssignedRegions: []string{"use1"}}

	for _, tc := range []struct {
		name string
		err  func() error
	}{
		{"text field", func() error { _, err := big.MarshalBinary(); return err }},
		{"events per batch", func() error { _, err := fsm.EncodeBatch(many); return err }},
		{"regions per job", func() error { _, err := manyRegions.MarshalBinary(); return err }},
		{"workflows per job", func() error { _, err := manyWorkflows.MarshalBinary(); return err }},
		{"event body bytes", func() error { _, err := hugeBody.MarshalBinary(); return err }},
		{"batch bytes", func() error {
			_, err := fsm.DecodeBatch(make([]byte, fsm.MaxBatchBytes+1))
			return err
		}},
		{"validate: workflows per job", func() error { return manyWorkflows.Validate() }},
		{"validate: text field", func() error { return big.Validate() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			var le *fsm.LimitError
			if !errors.As(err, &le) || !errors.Is(err, fsm.ErrLimit) {
				t.Fatalf("got %v, want a *LimitError", err)
			}
		})
	}
}

// TestDecodeBatch_ChecksCountBeforeAllocating: a batch header claiming
// 10,000 events in a few bytes fails without allocating 10,000 events.
func TestDecodeBatch_ChecksCountBeforeAllocating(t *testing.T) {
	claim := []byte{fsm.BatchVersion, 0x90, 0x4e} // uvarint 10000
	if _, err := fsm.DecodeBatch(claim); !errors.Is(err, fsm.ErrMalformed) {
		t.Fatalf("got %v, want ErrMalformed", err)
	}
	if n := allocatedBytes(func() { _, _ = fsm.DecodeBatch(claim) }); n > 4<<10 {
		t.Fatalf("%d bytes allocated for a 3-byte lying header", n)
	}
	over := []byte{fsm.BatchVersion, 0x91, 0x4e} // 10001
	if _, err := fsm.DecodeBatch(over); !errors.Is(err, fsm.ErrLimit) {
		t.Fatalf("got %v, want ErrLimit", err)
	}
}

// TestJobStateRecord_PendingCompletionIsAnOptionalTail: a job state
// without a pending completion encodes exactly as before the field (no
// bytes, so stored records and digests of such jobs are unchanged); one
// with a pending completion appends it as a decision and round-trips;
// a tail that is not a JobCompleted is refused (one encoding per state).
func TestJobStateRecord_PendingCompletionIsAnOptionalTail(t *testing.T) {
	s := &fsm.JobState{JobID: fsmtest.SampleJobID, Tenant: "acme", Status: fsm.JobStatusPending, Fence: 1,
		Regions: []fsm.RegionState{{Region: "use1"}}, Events: 2}
	plain, err := fsm.AppendJobState(nil, s)
	if err != nil {
		t.Fatal(err)
	}
	p := *s
	p.Pending = fsm.Decision{Type: fsm.TypeJobCompleted, EventID: fsmtest.ID(7), HLC: fsmtest.TS(1_700_000_000_001, 0, 2),
		Fence: 3, Node: "gate2", Body: &fsm.JobCompleted{FinalStatus: "SUCCEEDED"}}
	withPending, err := fsm.AppendJobState(nil, &p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(withPending, plain) || len(withPending) == len(plain) {
		t.Fatalf("the pending completion is not a tail of the record")
	}
	got, err := fsm.DecodeJobState(withPending)
	if err != nil || !reflect.DeepEqual(got, &p) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if got, err := fsm.DecodeJobState(plain); err != nil || got.Pending.Type != 0 {
		t.Fatalf("decode without a tail: %+v %v", got, err)
	}
	for _, tail := range [][]byte{{0}, {byte(fsm.TypeJobFailed)}} {
		if _, err := fsm.DecodeJobState(append(slices.Clone(plain), tail...)); err == nil {
			t.Fatalf("tail %v decoded", tail)
		}
	}
	p.Pending.Type, p.Pending.Body = fsm.TypeJobFailed, &fsm.JobFailed{Error: "boom"}
	if _, err := fsm.AppendJobState(nil, &p); err == nil {
		t.Fatal("a pending JobFailed encoded")
	}
}

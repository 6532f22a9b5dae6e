package fsm_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

const govJob = fsmtest.SampleJobID

func created(n uint64, jobID, tenant string, spec fsm.JobSpec) fsm.Event {
	return fsmtest.NewEvent(fsmtest.ID(n), jobID, tenant, "use1", "gate42", fsmtest.TS(1704931200000+int64(n), 0, 1), 1,
		&fsm.JobCreated{Spec: spec, AssignedRegions: spec.Regions})
}

func jobEvent(n uint64, jobID, tenant string, b fsm.Body) fsm.Event {
	return fsmtest.NewEvent(fsmtest.ID(n), jobID, tenant, "use1", "gate42", fsmtest.TS(1704931200000+int64(n), 0, 1), 1, b)
}

func govEvent(n uint64, tenant string, b fsm.Body) fsm.Event {
	return fsmtest.NewEvent(fsmtest.ID(n), "", tenant, "use1", "gate42", fsmtest.TS(1704931200000+int64(n), 0, 1), 0, b)
}

// A spec without extension fields encodes as before the extension (no
// block), so every old golden and stored byte stays valid; with some set,
// the block follows and round-trips.
func TestSpecExt_AbsentIsNoBytesPresentRoundTrips(t *testing.T) {
	plain := created(1, govJob, "acme", fsmtest.Spec("acme", "use1"))
	b0, err := plain.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	ext := created(1, govJob, "acme", fsmtest.ExtendedSpec("acme", "use1"))
	b1, err := ext.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1[:40], b0[:40]) || len(b1) <= len(b0) {
		t.Fatalf("extended encoding does not extend the plain one")
	}
	back, err := fsm.DecodeEvent(b1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, ext) {
		t.Fatalf("decode(encode(x)) != x:\n got  %+v\n want %+v", back.Body, ext.Body)
	}
	if err := ext.Validate(); err != nil {
		t.Fatalf("extended spec invalid: %v", err)
	}
	// JSON round trip of the extended event.
	j, err := json.Marshal(ext)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON fsm.Event
	if err := json.Unmarshal(j, &fromJSON); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromJSON, ext) {
		t.Fatalf("JSON round trip:\n got  %+v\n want %+v", fromJSON.Body, ext.Body)
	}
}

// TestSpecExt_Golden pins the extension block of fsm/DESIGN.md.
func TestSpecExt_Golden(t *testing.T) {
	spec := fsmtest.Spec("acme", "use1")
	spec.Type, spec.Priority = "render", -2
	b, err := fsm.AppendBody(nil, &fsm.JobCreated{Spec: spec, AssignedRegions: []string{"use1"}})
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := fsm.AppendBody(nil, &fsm.JobCreated{Spec: fsmtest.Spec("acme", "use1"), AssignedRegions: []string{"use1"}})
	want := "e5" + // tag
		"06" + hex.EncodeToString([]byte("render")) + // type
		"03" + // priority -2, zig-zag
		"00" + // no retry
		"00" + // replay_of ""
		"00" + // no replay digest
		"00" + // admission: reject
		"00" + // held: false
		"00" + // eligible_at_ms: 0
		"00" + // traceparent ""
		"00" // replay_reason ""
	if got := hex.EncodeToString(b[len(plain):]); got != want || !bytes.Equal(b[:len(plain)], plain) {
		t.Fatalf("extension block %s, want %s", got, want)
	}
}

// The decoders accept only canonical blocks: a block that sets nothing,
// a wrong tag, an unknown admission mode are refused.
func TestSpecExt_DecoderRefusesNonCanonicalBlocks(t *testing.T) {
	plain, _ := fsm.AppendBody(nil, &fsm.JobCreated{Spec: fsmtest.Spec("acme", "use1"), AssignedRegions: []string{"use1"}})
	for name, tail := range map[string]string{
		"empty block":     "e5" + "00" + "00" + "00" + "00" + "00" + "00" + "00" + "00" + "00" + "00",
		"wrong tag":       "e6" + "0172" + "00" + "00" + "00" + "00" + "00" + "00" + "00" + "00" + "00",
		"admission 2":     "e5" + "0172" + "00" + "00" + "00" + "00" + "02" + "00" + "00" + "00" + "00",
		"held 2":          "e5" + "0172" + "00" + "00" + "00" + "00" + "00" + "02" + "00" + "00" + "00",
		"trailing bytes":  "e5" + "0172" + "00" + "00" + "00" + "00" + "00" + "00" + "00" + "00" + "00" + "00",
		"valid (control)": "e5" + "0172" + "00" + "00" + "00" + "00" + "00" + "00" + "00" + "00" + "00",
	} {
		t.Run(name, func(t *testing.T) {
			x, _ := hex.DecodeString(tail)
			e := created(1, govJob, "acme", fsmtest.Spec("acme", "use1"))
			b, _ := e.MarshalBinary()
			// splice: replace the body with plain+tail, fix the body length.
			body := append(append([]byte(nil), plain...), x...)
			hdr := b[:len(b)-len(plain)-4]
			n := len(body)
			enc := append(append(append([]byte(nil), hdr...), byte(n), byte(n>>8), byte(n>>16), byte(n>>24)), body...)
			if got, err := fsm.DecodeEvent(enc); name == "valid (control)" {
				if err != nil || got.Body.(*fsm.JobCreated).Spec.Type != "r" {
					t.Fatalf("the control did not decode: %v", err)
				}
			} else if !errors.Is(err, fsm.ErrMalformed) {
				t.Fatalf("decoded %s: %v", name, err)
			}
		})
	}
}

func TestSpecExt_Validation(t *testing.T) {
	tests := []struct {
		name  string
		set   func(s *fsm.JobSpec)
		field string
	}{
		{"priority above", func(s *fsm.JobSpec) { s.Priority = fsm.MaxPriority + 1 }, "spec.priority"},
		{"priority below", func(s *fsm.JobSpec) { s.Priority = fsm.MinPriority - 1 }, "spec.priority"},
		{"type not a name", func(s *fsm.JobSpec) { s.Type = "a b" }, "spec.type"},
		{"traceparent not hex", func(s *fsm.JobSpec) { s.Traceparent = "00-XYZ" }, "spec.traceparent"},
		{"replay reason without replay_of", func(s *fsm.JobSpec) { s.ReplayReason = "why" }, "spec.replay_reason"},
		{"type too long", func(s *fsm.JobSpec) { s.Type = string(bytes.Repeat([]byte("t"), 65)) }, "spec.type"},
		{"retry zero attempts", func(s *fsm.JobSpec) { s.Retry = &fsm.RetryPolicy{} }, "spec.retry.max_attempts"},
		{"retry too many attempts", func(s *fsm.JobSpec) { s.Retry = &fsm.RetryPolicy{MaxAttempts: 101} }, "spec.retry.max_attempts"},
		{"retry max below initial", func(s *fsm.JobSpec) {
			s.Retry = &fsm.RetryPolicy{MaxAttempts: 2, InitialBackoff: 10, MaxBackoff: 5}
		}, "spec.retry.max_backoff"},
		{"retry backoff over a day", func(s *fsm.JobSpec) {
			s.Retry = &fsm.RetryPolicy{MaxAttempts: 2, InitialBackoff: fsm.MaxRetryBackoff + 1, MaxBackoff: fsm.MaxRetryBackoff + 1}
		}, "spec.retry.initial_backoff"},
		{"retry_on unsorted", func(s *fsm.JobSpec) {
			s.Retry = &fsm.RetryPolicy{MaxAttempts: 2, RetryOn: []string{"b", "a"}}
		}, "spec.retry.retry_on"},
		{"replay_of not a job id", func(s *fsm.JobSpec) { s.ReplayOf = "nope" }, "spec.replay_of"},
		{"digest without replay_of", func(s *fsm.JobSpec) { s.ReplayDigest = &fsm.Hash{} }, "spec.replay_digest"},
		{"unknown admission", func(s *fsm.JobSpec) { s.Admission = "maybe" }, "spec.admission"},
		{"eligible time on a job not held", func(s *fsm.JobSpec) { s.EligibleAtMs = 5 }, "spec.eligible_at_ms"},
		{"all valid", func(s *fsm.JobSpec) { *s = fsmtest.ExtendedSpec("acme", "use1") }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := fsmtest.Spec("acme", "use1")
			tt.set(&spec)
			e := created(1, govJob, "acme", spec)
			err := e.Validate()
			var fe *fsm.FieldError
			var le *fsm.LimitError
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.field == "":
			case errors.As(err, &fe) && fe.Field == tt.field, errors.As(err, &le) && le.Field == tt.field:
			default:
				t.Fatalf("got %v, want an error on %s", err, tt.field)
			}
		})
	}
}

// A held job waits for a JobAdmitted; the Admission hook decides whether
// one may admit it, reading the batch's earlier changes; a JobAdmitted of
// a job not held (or already admitted) is absorbed.
func TestJobAdmitted_HeldJobsAndTheAdmissionHook(t *testing.T) {
	room := 1 // admits while fewer than room held jobs are admitted
	hook := func(tx fsm.ReadTx, s *fsm.JobState) error {
		n := 0
		err := tx.Jobs(s.Tenant, "", func(j *fsm.JobState) error {
			if j.Spec.Held && j.Admitted {
				n++
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n >= room {
			return fmt.Errorf("%d admitted: %w", n, fsm.ErrOverQuota)
		}
		return nil
	}
	led, err := fsm.New(fsm.Config{Store: memstore.New(), Admission: hook})
	if err != nil {
		t.Fatal(err)
	}
	held := fsmtest.Spec("acme", "use1")
	held.Held, held.Admission = true, fsm.AdmissionQueue
	j1 := "use1-1704931200000-gate42-00001"
	j2 := "use1-1704931200000-gate42-00002"
	j3 := "use1-1704931200000-gate42-00003"
	res, err := led.Apply(1, []fsm.Event{
		created(1, j1, "acme", held),
		created(2, j2, "acme", held),
		created(3, j3, "acme", fsmtest.Spec("acme", "use1")),
		jobEvent(4, j1, "acme", &fsm.JobAdmitted{Reason: "room"}),
		jobEvent(5, j2, "acme", &fsm.JobAdmitted{Reason: "room"}), // same batch: the hook sees j1 admitted
		jobEvent(6, j3, "acme", &fsm.JobAdmitted{}),               // not held
		jobEvent(7, j1, "acme", &fsm.JobAdmitted{}),               // already admitted
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		o   fsm.Outcome
		err error
	}{
		{fsm.OutcomeApplied, nil}, {fsm.OutcomeApplied, nil}, {fsm.OutcomeApplied, nil},
		{fsm.OutcomeApplied, nil}, {fsm.OutcomeRejected, fsm.ErrOverQuota},
		{fsm.OutcomeAbsorbed, fsm.ErrNotQueued}, {fsm.OutcomeAbsorbed, fsm.ErrNotQueued},
	}
	for i, w := range want {
		if res[i].Outcome != w.o || (w.err != nil && !errors.Is(res[i].Err, w.err)) {
			t.Fatalf("event %d: %s (%v), want %s (%v)", i, res[i].Outcome, res[i].Err, w.o, w.err)
		}
	}
	s1, _ := led.Job("acme", j1)
	s2, _ := led.Job("acme", j2)
	if s1.Queued() || !s2.Queued() || !s1.Admitted {
		t.Fatalf("j1 queued %v admitted %v, j2 queued %v", s1.Queued(), s1.Admitted, s2.Queued())
	}
	room = 2
	if res, _ = led.Apply(2, []fsm.Event{jobEvent(8, j2, "acme", &fsm.JobAdmitted{})}); res[0].Outcome != fsm.OutcomeApplied {
		t.Fatalf("with room: %s (%v)", res[0].Outcome, res[0].Err)
	}
	// The admission is part of the job's state record, so of its digest.
	s2, _ = led.Job("acme", j2)
	rec, err := fsm.AppendJobState(nil, s2)
	if err != nil {
		t.Fatal(err)
	}
	back, err := fsm.DecodeJobState(rec)
	if err != nil || !reflect.DeepEqual(back, s2) {
		t.Fatalf("job record round trip: %v\n got  %+v\n want %+v", err, back, s2)
	}
}

func TestGovernance_PolicyRules(t *testing.T) {
	led := newLedger(t)
	set := func(key, value string) *fsm.PolicySet {
		return &fsm.PolicySet{Kind: "quota", Key: key, Value: json.RawMessage(value), Reason: "r", Ticket: "T-1", Requestor: "op"}
	}
	del := func(key string) *fsm.PolicyDeleted {
		return &fsm.PolicyDeleted{Kind: "quota", Key: key, Reason: "r", Ticket: "T-2", Requestor: "op"}
	}
	cases := []struct {
		name string
		e    fsm.Event
		o    fsm.Outcome
		err  error
	}{
		{"set", govEvent(1, "acme", set("acme", `{"max_active":2}`)), fsm.OutcomeApplied, nil},
		{"replace", govEvent(2, "acme", set("acme", `{"max_active":3}`)), fsm.OutcomeApplied, nil},
		{"another tenant's record", govEvent(3, "globex", set("acme", `{"max_active":9}`)), fsm.OutcomeRejected, fsm.ErrTenantMismatch},
		{"fleet-wide", govEvent(4, "", set("fleet", `{"capacity":100}`)), fsm.OutcomeApplied, nil},
		{"indented value", govEvent(5, "", set("x", "{ \"a\": 1 }")), fsm.OutcomeRejected, fsm.ErrInvalidEvent},
		{"not JSON", govEvent(6, "", set("x", "{")), fsm.OutcomeRejected, fsm.ErrInvalidEvent},
		{"bad kind", govEvent(7, "", &fsm.PolicySet{Kind: "Quota", Key: "x", Value: json.RawMessage(`1`)}), fsm.OutcomeRejected, fsm.ErrInvalidEvent},
		{"bad key", govEvent(8, "", set("a b", `1`)), fsm.OutcomeRejected, fsm.ErrInvalidEvent},
		{"with a job id", fsmtest.NewEvent(fsmtest.ID(9), govJob, "acme", "use1", "gate42", fsmtest.TS(1704931200009, 0, 1), 0, set("acme", `1`)), fsm.OutcomeRejected, fsm.ErrInvalidEvent},
		{"delete another tenant's", govEvent(10, "globex", del("acme")), fsm.OutcomeRejected, fsm.ErrUnknownPolicy},
		{"delete", govEvent(11, "acme", del("acme")), fsm.OutcomeApplied, nil},
		{"delete again", govEvent(12, "acme", del("acme")), fsm.OutcomeRejected, fsm.ErrUnknownPolicy},
	}
	for i, c := range cases {
		res, err := led.Apply(uint64(i+1), []fsm.Event{c.e})
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Outcome != c.o || (c.err != nil && !errors.Is(res[0].Err, c.err)) {
			t.Fatalf("%s: %s (%v), want %s (%v)", c.name, res[0].Outcome, res[0].Err, c.o, c.err)
		}
	}
	ps, err := led.Policies("")
	if err != nil || len(ps) != 1 || ps[0].Key != "fleet" || ps[0].Tenant != "" || ps[0].Ticket != "T-1" {
		t.Fatalf("policies %+v (%v)", ps, err)
	}
	// The tenant's changes are in its audit chain: set, replace, delete.
	if h, err := led.VerifyChain("acme"); err != nil || h.Seq != 3 {
		t.Fatalf("acme chain %+v (%v), want 3 events", h, err)
	}
}

// The records of a kind are bounded: a new key past MaxPoliciesPerKind is
// rejected, a replacement of an existing key is not.
func TestGovernance_KindIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 records")
	}
	led := newLedger(t)
	batch := make([]fsm.Event, 0, 1000)
	n := uint64(0)
	for i := range fsm.MaxPoliciesPerKind {
		n++
		batch = append(batch, govEvent(n, "", &fsm.PolicySet{Kind: "quota", Key: fmt.Sprintf("k%05d", i), Value: json.RawMessage(`1`)}))
		if len(batch) == cap(batch) {
			if _, err := led.Apply(n, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	res, err := led.Apply(n+1, []fsm.Event{
		govEvent(n+1, "", &fsm.PolicySet{Kind: "quota", Key: "one-more", Value: json.RawMessage(`1`)}),
		govEvent(n+2, "", &fsm.PolicySet{Kind: "quota", Key: "k00000", Value: json.RawMessage(`2`)}),
		govEvent(n+3, "", &fsm.PolicySet{Kind: "throttle", Key: "k", Value: json.RawMessage(`2`)}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, fsm.ErrLimit) || res[1].Outcome != fsm.OutcomeApplied || res[2].Outcome != fsm.OutcomeApplied {
		t.Fatalf("results %+v", res)
	}
}

// Governance records are state keys: the Observer hears of their changes
// and StateDigest hashes them, so replica anti-entropy compares them.
func TestGovernance_StateKeys(t *testing.T) {
	led := newLedger(t)
	if _, err := led.Apply(1, []fsm.Event{govEvent(1, "acme", &fsm.PolicySet{Kind: "throttle", Key: "acme", Value: json.RawMessage(`{"paused":true}`)})}); err != nil {
		t.Fatal(err)
	}
	var keys []fsm.StateKey
	err := led.View(func(tx fsm.ReadTx) error {
		return fsm.AllStateKeys(tx, func(k fsm.StateKey) error {
			if k.Kind == fsm.StatePolicy {
				keys = append(keys, k)
				if _, ok, err := fsm.StateDigest(tx, k); !ok || err != nil {
					return fmt.Errorf("digest of %v: %v %v", k, ok, err)
				}
			}
			return nil
		})
	})
	if err != nil || len(keys) != 1 || keys[0].TreeID() != "~policy/throttle/acme" {
		t.Fatalf("policy keys %v (%v)", keys, err)
	}
}

func FuzzDecodePolicy(f *testing.F) {
	for _, p := range []*fsm.Policy{
		{Kind: "quota", Key: "acme/render", Tenant: "acme", Value: json.RawMessage(`{"max_active":3}`), HLC: fsmtest.TS(1, 2, 3), Reason: "r", Ticket: "T", Requestor: "op"},
		{Kind: "throttle", Key: "fleet", Value: json.RawMessage(`true`)},
	} {
		b, err := fsm.AppendPolicy(nil, p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p *fsm.Policy
		var err error
		checkAllocBound(t, len(data), func() { p, err = fsm.DecodePolicy(data) })
		if err != nil {
			return
		}
		again, err := fsm.AppendPolicy(nil, p)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("encode(decode(b)) != b: %v\n b     %x\n again %x", err, data, again)
		}
	})
}

package fsm_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// meterHookFunc counts its calls and decides what decide returns.
type meterHookFunc struct {
	calls  int
	decide func(tx fsm.ReadTx, job *fsm.JobState, atMs int64) (fsm.MeterDecision, error)
}

func (h *meterHookFunc) hook(tx fsm.ReadTx, job *fsm.JobState, atMs int64) (fsm.MeterDecision, error) {
	h.calls++
	return h.decide(tx, job, atMs)
}

func meteredLedger(t *testing.T, h *meterHookFunc) (*fsm.Ledger, *memstore.Store) {
	t.Helper()
	st := memstore.New()
	led, err := fsm.New(fsm.Config{Store: st, Meter: h.hook})
	if err != nil {
		t.Fatal(err)
	}
	return led, st
}

func quotaSet(n uint64, tenant, key string) fsm.Event {
	return govEvent(n, tenant, &fsm.PolicySet{Kind: "quota", Key: key, Value: json.RawMessage(`{"max_per_hour":1}`), Reason: "r", Ticket: "T", Requestor: "op"})
}

// The ledger stores what the hook decides of a new job: its meters, and a
// hold that makes the job queued until the named time; the JobCreated as
// stored keeps the gate's spec. A repeat of the event (same id) is a
// duplicate that never reaches the hook, so it takes nothing twice; a
// JobAdmitted before the hold's end is rejected, after it admits; the
// meter goes with its governance record.
func TestMeter_HookDecidesAndTheLedgerKeeps(t *testing.T) {
	h := &meterHookFunc{}
	h.decide = func(tx fsm.ReadTx, job *fsm.JobState, atMs int64) (fsm.MeterDecision, error) {
		m, err := tx.Meter("quota", job.Tenant)
		if err != nil {
			return fsm.MeterDecision{}, err
		}
		level := int64(1) // one token, then every job waits 1 s more
		if m != nil {
			level = m.Level
		}
		d := fsm.MeterDecision{Meters: []fsm.Meter{{Kind: "quota", Key: job.Tenant, Level: level - 1, AtMs: atMs}}}
		if level-1 < 0 {
			d.HoldUntilMs = atMs + 1000*(1-level)
		}
		return d, nil
	}
	led, _ := meteredLedger(t, h)
	apply := func(i uint64, e fsm.Event) fsm.Result {
		t.Helper()
		res, err := led.Apply(i, []fsm.Event{e})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	job2 := strings.Replace(govJob, "00001", "00002", 1)
	if r := apply(1, quotaSet(1, "acme", "acme")); r.Outcome != fsm.OutcomeApplied {
		t.Fatalf("policy: %+v", r)
	}
	first := created(2, govJob, "acme", fsmtest.Spec("acme", "use1"))
	if r := apply(2, first); r.Outcome != fsm.OutcomeApplied {
		t.Fatalf("first job: %+v", r)
	}
	if s, _ := led.JobByID(govJob); s.Queued() || s.Spec.Held {
		t.Fatalf("the first job took the token and is not held: %+v", s.Spec)
	}
	second := created(3, job2, "acme", fsmtest.Spec("acme", "use1"))
	if r := apply(3, second); r.Outcome != fsm.OutcomeApplied {
		t.Fatalf("second job: %+v", r)
	}
	s, _ := led.JobByID(job2)
	if wantAt := second.HLC.WallMs + 1000; !s.Queued() || s.Spec.EligibleAtMs != wantAt {
		t.Fatalf("second job queued %v eligible at %d, want held until %d", s.Queued(), s.Spec.EligibleAtMs, wantAt)
	}
	if se, _ := led.Event("acme", second.ID); se.Body.(*fsm.JobCreated).Spec.Held {
		t.Fatal("the stored JobCreated changed: the hold is the job's state, not the event's")
	}
	if r := apply(4, second); r.Outcome != fsm.OutcomeDuplicate || h.calls != 2 {
		t.Fatalf("a repeated JobCreated: %+v, hook calls %d (want a duplicate that takes nothing)", r, h.calls)
	}
	ms, _ := led.Meters()
	if len(ms) != 1 || ms[0].Level != -1 || ms[0].AtMs != second.HLC.WallMs {
		t.Fatalf("meters %+v", ms)
	}
	early := fsmtest.NewEvent(fsmtest.ID(5), job2, "acme", "use1", "gate42", fsmtest.TS(second.HLC.WallMs+999, 0, 1), 1, &fsm.JobAdmitted{Reason: "r"})
	if r := apply(5, early); r.Outcome != fsm.OutcomeRejected || !errors.Is(r.Err, fsm.ErrOverQuota) {
		t.Fatalf("admission before the hold ends: %+v", r)
	}
	onTime := fsmtest.NewEvent(fsmtest.ID(6), job2, "acme", "use1", "gate42", fsmtest.TS(second.HLC.WallMs+1000, 0, 1), 1, &fsm.JobAdmitted{Reason: "r"})
	if r := apply(6, onTime); r.Outcome != fsm.OutcomeApplied {
		t.Fatalf("admission when the hold ends: %+v", r)
	}
	if r := apply(7, govEvent(7, "acme", &fsm.PolicyDeleted{Kind: "quota", Key: "acme", Reason: "r", Ticket: "T", Requestor: "op"})); r.Outcome != fsm.OutcomeApplied {
		t.Fatalf("delete policy: %+v", r)
	}
	if ms, _ := led.Meters(); len(ms) != 0 {
		t.Fatalf("meters after their record was deleted: %+v", ms)
	}
}

// A hook decision that breaks the contract fails the batch (a hook bug
// must not spread into the state), and the batch leaves nothing.
func TestMeter_HookContractIsChecked(t *testing.T) {
	valid := fsm.Meter{Kind: "quota", Key: "acme", Level: 1, AtMs: 5}
	cases := []struct {
		name   string
		meters []fsm.Meter
		err    error
	}{
		{"no governance record", []fsm.Meter{{Kind: "quota", Key: "globex", Level: 1, AtMs: 5}}, nil},
		{"twice", []fsm.Meter{valid, valid}, nil},
		{"too many", []fsm.Meter{valid, valid, valid, valid, valid}, nil},
		{"bad key", []fsm.Meter{{Kind: "quota", Key: "a b", AtMs: 5}}, nil},
		{"level over the bound", []fsm.Meter{{Kind: "quota", Key: "acme", Level: fsm.MaxMeterLevel + 1}}, nil},
		{"before the epoch", []fsm.Meter{{Kind: "quota", Key: "acme", AtMs: -1}}, nil},
		{"hook error", nil, errors.New("boom")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &meterHookFunc{decide: func(fsm.ReadTx, *fsm.JobState, int64) (fsm.MeterDecision, error) {
				return fsm.MeterDecision{Meters: c.meters, HoldUntilMs: 9}, c.err
			}}
			led, _ := meteredLedger(t, h)
			if _, err := led.Apply(1, []fsm.Event{quotaSet(1, "acme", "acme")}); err != nil {
				t.Fatal(err)
			}
			if _, err := led.Apply(2, []fsm.Event{created(2, govJob, "acme", fsmtest.Spec("acme", "use1"))}); err == nil {
				t.Fatal("the batch applied")
			}
			if s, err := led.JobByID(govJob); s != nil || !errors.Is(err, fsm.ErrNotFound) {
				t.Fatalf("job after a failed batch: %+v (%v)", s, err)
			}
			if ms, _ := led.Meters(); len(ms) != 0 || led.AppliedIndex() != 1 {
				t.Fatalf("meters %+v, applied %d after a failed batch", ms, led.AppliedIndex())
			}
		})
	}
}

// Meters are state keys (the Observer hears of them, replicas compare
// their digests), part of the governance digest, carried by snapshots;
// a snapshot with a meter whose record it does not hold is refused.
func TestMeter_StateKeysDigestAndSnapshot(t *testing.T) {
	h := &meterHookFunc{decide: func(_ fsm.ReadTx, job *fsm.JobState, atMs int64) (fsm.MeterDecision, error) {
		return fsm.MeterDecision{Meters: []fsm.Meter{{Kind: "quota", Key: job.Tenant, Level: -7, AtMs: atMs}}}, nil
	}}
	led, st := meteredLedger(t, h)
	before, _, _ := led.GovernanceDigest()
	if _, err := led.Apply(1, []fsm.Event{quotaSet(1, "acme", "acme")}); err != nil {
		t.Fatal(err)
	}
	withPolicy, _, _ := led.GovernanceDigest()
	if _, err := led.Apply(2, []fsm.Event{created(2, govJob, "acme", fsmtest.Spec("acme", "use1"))}); err != nil {
		t.Fatal(err)
	}
	withMeter, _, _ := led.GovernanceDigest()
	if before == withPolicy || withPolicy == withMeter {
		t.Fatal("the governance digest does not cover meters")
	}
	var keys []string
	err := led.View(func(tx fsm.ReadTx) error {
		return fsm.AllStateKeys(tx, func(k fsm.StateKey) error {
			if k.Kind == fsm.StateMeter {
				keys = append(keys, k.TreeID())
				if _, ok, err := fsm.StateDigest(tx, k); !ok || err != nil {
					t.Fatalf("digest of %v: %v %v", k, ok, err)
				}
			}
			return nil
		})
	})
	if err != nil || len(keys) != 1 || keys[0] != "~meter/quota/acme" {
		t.Fatalf("meter keys %v (%v)", keys, err)
	}
	var snap bytes.Buffer
	if err := led.SnapshotRecords(&snap); err != nil {
		t.Fatal(err)
	}
	restored, _ := meteredLedger(t, &meterHookFunc{})
	if err := restored.Restore(bytes.NewReader(snap.Bytes())); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := restored.GovernanceDigest(); got != withMeter {
		t.Fatal("a restored ledger lost its meters")
	}
	// A meter without its record: the store holds one (put behind the
	// ledger's back), the snapshot carries it, a restore refuses it.
	if err := st.Update(func(tx fsm.Tx) error {
		return tx.PutMeter(&fsm.Meter{Kind: "quota", Key: "orphan", Level: 1, AtMs: 1})
	}); err != nil {
		t.Fatal(err)
	}
	snap.Reset()
	if err := led.SnapshotRecords(&snap); err != nil {
		t.Fatal(err)
	}
	if err := restored.Restore(bytes.NewReader(snap.Bytes())); err == nil || !strings.Contains(err.Error(), "no governance record") {
		t.Fatalf("restore of an orphan meter: %v", err)
	}
	if got, _, _ := restored.GovernanceDigest(); got != withMeter {
		t.Fatal("a refused restore changed the state")
	}
}

// The meter record's bytes: version 1, kind, key, level and at_ms as
// zig-zag varints. Never change.
func TestMeter_Golden(t *testing.T) {
	b, err := fsm.AppendMeter(nil, &fsm.Meter{Kind: "quota", Key: "acme", Level: -3, AtMs: 1704931200000})
	if err != nil {
		t.Fatal(err)
	}
	const want = "01" + "0571756f7461" + "0461636d65" + "05" + "80b08cdd9e63"
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("meter record %s, want %s", got, want)
	}
}

func FuzzDecodeMeter(f *testing.F) {
	for _, m := range []*fsm.Meter{
		{Kind: "quota", Key: "acme", Level: 3_600_000, AtMs: 1704931200000},
		{Kind: "quota", Key: "acme:render", Level: -fsm.MaxMeterLevel, AtMs: 0},
	} {
		b, err := fsm.AppendMeter(nil, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m *fsm.Meter
		var err error
		checkAllocBound(t, len(data), func() { m, err = fsm.DecodeMeter(data) })
		if err != nil {
			return
		}
		again, err := fsm.AppendMeter(nil, m)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("encode(decode(b)) != b: %v\n b     %x\n again %x", err, data, again)
		}
	})
}

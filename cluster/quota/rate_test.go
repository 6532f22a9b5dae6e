package quota

import (
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

const hourMs = 3_600_000

// The bucket's arithmetic on a fake clock: each step takes a token at
// atMs (or, wait, asks how long until one is there) and must leave the
// meter and the due time given. Policy: 4 per hour, burst 2 (a token
// every 15 minutes, two at most in hand).
func TestBucket_TakeAndWait(t *testing.T) {
	b, _ := bucketOf(&Policy{Tenant: "acme", MaxPerHour: 4, Burst: 2})
	const t0 = 1_700_000_000_000
	quarter := int64(hourMs / 4)
	steps := []struct {
		name      string
		atMs      int64
		wait      bool  // ask wait instead of taking
		wantLevel int64 // in tokens × UnitsPerToken
		wantDue   int64 // take: due time (0: none); wait: the wait
	}{
		{"a new meter is full: the wait is 0", t0, true, 0, 0},
		{"first token", t0, false, 1 * UnitsPerToken, 0},
		{"second token, the burst spent", t0, false, 0, 0},
		{"no token: the wait is a quarter", t0, true, 0, quarter},
		{"third: reserved a quarter ahead", t0, false, -UnitsPerToken, t0 + quarter},
		{"fourth: half an hour ahead", t0, false, -2 * UnitsPerToken, t0 + 2*quarter},
		{"wait now: three quarters", t0 + 1, true, 0, 3*quarter - 1},
		{"an earlier stamp earns nothing, is due after the others", t0 - 60_000, false, -3 * UnitsPerToken, t0 + 3*quarter},
		{"an hour later four tokens were earned back: this one is there", t0 + hourMs, false, 0, 0},
		{"a day later the bucket is full again (burst)", t0 + 25*hourMs, false, UnitsPerToken, 0},
	}
	var m *fsm.Meter
	for _, s := range steps {
		if s.wait {
			if got := b.wait(m, s.atMs); got != s.wantDue {
				t.Fatalf("%s: wait %d ms, want %d", s.name, got, s.wantDue)
			}
			continue
		}
		next, due := b.take(m, "acme", s.atMs)
		if next.Level != s.wantLevel || due != s.wantDue || next.Kind != Kind || next.Key != "acme" {
			t.Fatalf("%s: meter %+v due %d, want level %d due %d", s.name, next, due, s.wantLevel, s.wantDue)
		}
		m = &next
	}
}

// Edge cases of the arithmetic: a fractional refill is kept (no drift), a
// lowered burst cuts the level, a meter of the epoch refilled by a
// modern time does not overflow, and reservations stop at MaxDebtTokens.
func TestBucket_Edges(t *testing.T) {
	seven, _ := bucketOf(&Policy{Tenant: "a", MaxPerHour: 7})
	m := &fsm.Meter{Kind: Kind, Key: "a", Level: 0, AtMs: 1000}
	// 7 per hour: a token every 514,285.71 ms; after 514,285 ms not yet,
	// one more ms and it is there.
	if w := seven.wait(m, 1000+514_285); w != 1 {
		t.Fatalf("wait %d ms, want 1", w)
	}
	if w := seven.wait(m, 1000+514_286); w != 0 {
		t.Fatalf("wait %d ms, want 0", w)
	}
	lowered, _ := bucketOf(&Policy{Tenant: "a", MaxPerHour: 7, Burst: 1})
	if lvl, _ := lowered.advance(&fsm.Meter{Kind: Kind, Key: "a", Level: 5 * UnitsPerToken, AtMs: 1}, 1); lvl != UnitsPerToken {
		t.Fatalf("a lowered burst keeps level %d", lvl)
	}
	huge, _ := bucketOf(&Policy{Tenant: "a", MaxPerHour: MaxPerHourLimit, Burst: MaxPerHourLimit})
	lvl, at := huge.advance(&fsm.Meter{Kind: Kind, Key: "a", Level: -MaxDebtTokens * UnitsPerToken, AtMs: 0}, 1<<50)
	if lvl != int64(MaxPerHourLimit)*UnitsPerToken || at != 1<<50 {
		t.Fatalf("refill from the epoch: level %d at %d", lvl, at)
	}
	one, _ := bucketOf(&Policy{Tenant: "a", MaxPerHour: 1})
	floor := &fsm.Meter{Kind: Kind, Key: "a", Level: -MaxDebtTokens * UnitsPerToken, AtMs: 5}
	next, due := one.take(floor, "a", 5)
	if next.Level != floor.Level || due != 5+MaxDebtTokens*hourMs {
		t.Fatalf("at the debt bound: %+v due %d", next, due)
	}
	if _, ok := bucketOf(&Policy{Tenant: "a", MaxActive: 3}); ok {
		t.Fatal("a policy without max_per_hour has a bucket")
	}
}

// rateKit is a global ledger with the quota's hooks, applying events at
// the times a test gives.
type rateKit struct {
	t     *testing.T
	led   *fsm.Ledger
	n     uint64
	index uint64
}

func newRateKit(t *testing.T) *rateKit {
	led, err := fsm.New(fsm.Config{Store: memstore.New(), Admission: Hook, Meter: MeterHook})
	if err != nil {
		t.Fatal(err)
	}
	return &rateKit{t: t, led: led}
}

func (k *rateKit) applyAt(e fsm.Event) fsm.Result {
	k.t.Helper()
	k.index++
	res, err := k.led.Apply(k.index, []fsm.Event{e})
	if err != nil {
		k.t.Fatal(err)
	}
	return res[0]
}

func (k *rateKit) event(atMs int64, jobID, tenant string, b fsm.Body) fsm.Event {
	k.n++
	return fsmtest.NewEvent(fsmtest.ID(k.n), jobID, tenant, "use1", "gate1", fsmtest.TS(atMs, 0, 1), 1, b)
}

func (k *rateKit) policy(atMs int64, p Policy) {
	k.t.Helper()
	v, _ := p.Encode()
	if r := k.applyAt(k.event(atMs, "", p.Tenant, &fsm.PolicySet{Kind: Kind, Key: p.Key(), Value: v, Reason: "t", Ticket: "T"})); r.Outcome != fsm.OutcomeApplied {
		k.t.Fatalf("policy: %v", r.Err)
	}
}

func (k *rateKit) create(atMs int64, seq int, tenant, jobType string) (fsm.Event, *fsm.JobState) {
	k.t.Helper()
	id := fsm.JobID{Region: "use1", UnixMs: atMs, Gate: "gate1", Seq: uint32(seq)}.String()
	spec := fsmtest.Spec(tenant, "use1")
	spec.Type = jobType
	e := k.event(atMs, id, tenant, &fsm.JobCreated{Spec: spec, AssignedRegions: spec.Regions})
	if r := k.applyAt(e); r.Outcome != fsm.OutcomeApplied {
		k.t.Fatalf("create %s: %v", id, r.Err)
	}
	s, err := k.led.JobByID(id)
	if err != nil {
		k.t.Fatal(err)
	}
	return e, s
}

// On a ledger: a tenant of max_per_hour 3 creating 5 jobs at once gets 3
// admissible and 2 held, due 20 and 40 minutes later; a repeated
// JobCreated takes no token; the fast path agrees; the job type's own
// rate holds a job its tenant's would let through; the queued job is
// admitted when due and not before; the meter goes with the policy.
func TestMeterHook_OnTheLedger(t *testing.T) {
	k := newRateKit(t)
	const t0 = 1_700_000_000_000
	k.policy(t0, Policy{Tenant: "acme", MaxPerHour: 3})
	var held []*fsm.JobState
	var firstEvent fsm.Event
	for i := 1; i <= 5; i++ {
		e, s := k.create(t0+1, i, "acme", "")
		if i == 1 {
			firstEvent = e
		}
		if s.Queued() {
			held = append(held, s)
		}
	}
	if len(held) != 2 || held[0].Spec.EligibleAtMs != t0+1+hourMs/3 || held[1].Spec.EligibleAtMs != t0+1+2*hourMs/3 {
		t.Fatalf("held %d jobs: %+v", len(held), held)
	}
	before, _ := k.led.Meters()
	if r := k.applyAt(firstEvent); r.Outcome != fsm.OutcomeDuplicate {
		t.Fatalf("a repeated JobCreated: %s", r.Outcome)
	}
	if after, _ := k.led.Meters(); len(after) != 1 || *after[0] != *before[0] {
		t.Fatalf("a repeated JobCreated moved the meter: %+v -> %+v", before[0], after[0])
	}
	_ = k.led.View(func(tx fsm.ReadTx) error {
		l, wait, metered, err := RateCheck(tx, "acme", "", t0+2)
		if err != nil || !metered || l == nil || l.Name != "max_per_hour" || l.Allowed != 3 || wait != hourMs-1 {
			t.Fatalf("fast path: %+v wait %d (%v)", l, wait, err)
		}
		if l, _, metered, err := RateCheck(tx, "globex", "", t0+2); l != nil || metered || err != nil {
			t.Fatalf("a tenant without a rate: %+v %v (%v)", l, metered, err)
		}
		return nil
	})
	// A job type's own rate: one per hour for render jobs of globex.
	k.policy(t0, Policy{Tenant: "globex", MaxPerHour: 100})
	k.policy(t0, Policy{Tenant: "globex", JobType: "render", MaxPerHour: 1})
	if _, s := k.create(t0+5, 1, "globex", "render"); s.Queued() {
		t.Fatal("the first render job was held")
	}
	if _, s := k.create(t0+5, 2, "globex", "render"); !s.Queued() || s.Spec.EligibleAtMs != t0+5+hourMs {
		t.Fatalf("the second render job: queued %v eligible %d", s.Queued(), s.Spec.EligibleAtMs)
	}
	if _, s := k.create(t0+5, 3, "globex", ""); s.Queued() {
		t.Fatal("an untyped job was held by the job type's rate")
	}
	// Admission of a held job: not before its token is due.
	h := held[0]
	if r := k.applyAt(k.event(h.Spec.EligibleAtMs-1, h.JobID, "acme", &fsm.JobAdmitted{Reason: "r"})); r.Outcome != fsm.OutcomeRejected {
		t.Fatalf("an early admission: %s", r.Outcome)
	}
	if r := k.applyAt(k.event(h.Spec.EligibleAtMs, h.JobID, "acme", &fsm.JobAdmitted{Reason: "r"})); r.Outcome != fsm.OutcomeApplied {
		t.Fatalf("an admission when due: %s %v", r.Outcome, r.Err)
	}
	if r := k.applyAt(k.event(t0+10, "", "acme", &fsm.PolicyDeleted{Kind: Kind, Key: "acme", Reason: "t", Ticket: "T"})); r.Outcome != fsm.OutcomeApplied {
		t.Fatal(r.Err)
	}
	ms, _ := k.led.Meters()
	for _, m := range ms {
		if m.Key == "acme" {
			t.Fatalf("the deleted policy's meter is kept: %+v", m)
		}
	}
	if _, s := k.create(t0+11, 9, "acme", ""); s.Queued() {
		t.Fatal("a job was held after its policy was deleted")
	}
}

// A policy value the hook cannot read is no rate (deterministic), never a
// failed batch: a replica must not stop over a record.
func TestMeterHook_UnreadablePolicyIsNoRate(t *testing.T) {
	k := newRateKit(t)
	const t0 = 1_700_000_000_000
	if r := k.applyAt(k.event(t0, "", "acme", &fsm.PolicySet{Kind: Kind, Key: "acme", Value: []byte(`{"max_per_hour":"x"}`)})); r.Outcome != fsm.OutcomeApplied {
		t.Fatal(r.Err)
	}
	for i := 1; i <= 3; i++ {
		if _, s := k.create(t0+1, i, "acme", ""); s.Queued() {
			t.Fatal("held by an unreadable policy")
		}
	}
}

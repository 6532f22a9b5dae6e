package quota

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// ledgerKit applies events to a ledger with the quota hook, numbering
// them.
type ledgerKit struct {
	t     *testing.T
	led   *fsm.Ledger
	n     uint64
	index uint64
}

func newKit(t *testing.T) *ledgerKit {
	led, err := fsm.New(fsm.Config{Store: memstore.New(), Admission: Hook})
	if err != nil {
		t.Fatal(err)
	}
	return &ledgerKit{t: t, led: led}
}

func (k *ledgerKit) apply(jobID, tenant string, fence uint64, b fsm.Body) fsm.Result {
	k.t.Helper()
	k.n++
	k.index++
	e := fsmtest.NewEvent(fsmtest.ID(k.n), jobID, tenant, "use1", "gate1", fsmtest.TS(1_700_000_000_000+int64(k.n), 0, 1), fence, b)
	res, err := k.led.Apply(k.index, []fsm.Event{e})
	if err != nil {
		k.t.Fatal(err)
	}
	return res[0]
}

func (k *ledgerKit) policy(p Policy) {
	k.t.Helper()
	v, _ := p.Encode()
	if r := k.apply("", p.Tenant, 0, &fsm.PolicySet{Kind: Kind, Key: p.Key(), Value: v, Reason: "test", Ticket: "T"}); r.Outcome != fsm.OutcomeApplied {
		k.t.Fatalf("policy: %v", r.Err)
	}
}

func (k *ledgerKit) fleet(f FleetPolicy) {
	k.t.Helper()
	v, _ := f.Encode()
	if r := k.apply("", "", 0, &fsm.PolicySet{Kind: FleetKind, Key: FleetKey, Value: v}); r.Outcome != fsm.OutcomeApplied {
		k.t.Fatalf("fleet: %v", r.Err)
	}
}

// job creates a job: held (queued) or not, with a type and priority.
func (k *ledgerKit) job(seq int, tenant, jobType string, priority int32, held bool) string {
	k.t.Helper()
	id := fsm.JobID{Region: "use1", UnixMs: 1_700_000_000_000, Gate: "gate1", Seq: uint32(seq)}.String()
	spec := fsmtest.Spec(tenant, "use1")
	spec.Type, spec.Priority, spec.Held = jobType, priority, held
	if held {
		spec.Admission = fsm.AdmissionQueue
	}
	if r := k.apply(id, tenant, 1, &fsm.JobCreated{Spec: spec, AssignedRegions: spec.Regions}); r.Outcome != fsm.OutcomeApplied {
		k.t.Fatalf("create %s: %v", id, r.Err)
	}
	return id
}

func (k *ledgerKit) view(fn func(tx fsm.ReadTx)) {
	k.t.Helper()
	if err := k.led.View(func(tx fsm.ReadTx) error { fn(tx); return nil }); err != nil {
		k.t.Fatal(err)
	}
}

func TestPolicy_Validate(t *testing.T) {
	tests := []struct {
		p  Policy
		ok bool
	}{
		{Policy{Tenant: "acme", MaxActive: 3}, true},
		{Policy{Tenant: "acme", JobType: "render", MaxPerHour: 10, Burst: 2}, true},
		{Policy{Tenant: "", MaxActive: 3}, false},
		{Policy{Tenant: "a b", MaxActive: 3}, false},
		{Policy{Tenant: "acme", JobType: "x/y", MaxActive: 3}, false},
		{Policy{Tenant: "acme"}, false},
		{Policy{Tenant: "acme", MaxActive: MaxActiveLimit + 1}, false},
		{Policy{Tenant: "acme", Burst: 3}, false},
		{Policy{Tenant: "acme", Weight: MaxWeight + 1}, false},
	}
	for _, tt := range tests {
		if err := tt.p.Validate(); (err == nil) != tt.ok || err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ok %v", tt.p, err, tt.ok)
		}
	}
	for _, f := range []FleetPolicy{{Capacity: 0, Strategy: Fixed}, {Capacity: 5, Strategy: "lottery"}} {
		if f.Validate() == nil {
			t.Errorf("fleet %+v accepted", f)
		}
	}
}

// Count and Check: active and queued jobs by tenant and type; the
// tenant's limit, then its type's.
func TestCheck_TenantAndTypeLimits(t *testing.T) {
	k := newKit(t)
	k.policy(Policy{Tenant: "acme", MaxActive: 3})
	k.policy(Policy{Tenant: "acme", JobType: "render", MaxActive: 1})
	k.job(1, "acme", "render", 0, false)
	k.job(2, "acme", "", 0, false)
	k.job(3, "acme", "", 0, true) // queued: not active
	k.job(4, "globex", "", 0, false)
	k.view(func(tx fsm.ReadTx) {
		u, _ := Count(tx, "acme", "", 0)
		if u != (Usage{Active: 2, Queued: 1}) {
			t.Fatalf("acme usage %+v", u)
		}
		if l, err := Check(tx, "acme", ""); l != nil || err != nil {
			t.Fatalf("acme untyped refused: %v %v", l, err)
		}
		l, err := Check(tx, "acme", "render")
		if err != nil || l == nil || l.JobType != "render" || l.Allowed != 1 || l.Used != 1 {
			t.Fatalf("acme render: %+v %v, want the render limit", l, err)
		}
		if l, _ := Check(tx, "globex", "render"); l != nil {
			t.Fatalf("globex has no policy but was refused: %v", l)
		}
	})
	k.job(5, "acme", "", 0, false)
	k.view(func(tx fsm.ReadTx) {
		if l, _ := Check(tx, "acme", ""); l == nil || l.Name != "max_active" || l.Allowed != 3 || l.Used != 3 {
			t.Fatalf("acme at 3 of 3: %+v", l)
		}
	})
}

// The fleet share lowers a tenant's max_active.
func TestAllowed_FleetShare(t *testing.T) {
	k := newKit(t)
	k.policy(Policy{Tenant: "acme", MaxActive: 100, Weight: 1})
	k.policy(Policy{Tenant: "globex", Weight: 3})
	k.fleet(FleetPolicy{Capacity: 8, Strategy: Proportional})
	k.view(func(tx fsm.ReadTx) {
		for tenant, want := range map[string]int64{"acme": 2, "globex": 6} {
			if got, ok, err := Allowed(tx, tenant, ""); !ok || err != nil || got != want {
				t.Fatalf("%s allowed %d (%v %v), want %d", tenant, got, ok, err, want)
			}
		}
		if _, ok, _ := Allowed(tx, "initech", ""); ok {
			t.Fatal("a tenant without a policy got a share")
		}
	})
}

// Admissions ranks queued jobs (priority, then age), admits as many as
// the limits have room for, and the ledger's hook refuses an admission
// over the limit even if one is proposed.
func TestAdmissions_RankAndRoomAndTheHook(t *testing.T) {
	k := newKit(t)
	k.policy(Policy{Tenant: "acme", MaxActive: 2})
	running := k.job(1, "acme", "", 0, false)
	low := k.job(2, "acme", "", 0, true)
	high := k.job(3, "acme", "", 5, true)
	older := k.job(4, "acme", "", 5, true)
	_ = older
	var got []string
	k.view(func(tx fsm.ReadTx) {
		adm, err := Admissions(tx, "acme", 1_800_000_000_000, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range adm {
			got = append(got, s.JobID)
		}
	})
	// One slot free (2 allowed, 1 running): the best is priority 5,
	// and of the two the older (created first: job 3).
	if len(got) != 1 || got[0] != high {
		t.Fatalf("admissions %v, want [%s]", got, high)
	}
	if r := k.apply(high, "acme", 0, &fsm.JobAdmitted{Reason: "room"}); r.Outcome != fsm.OutcomeApplied {
		t.Fatalf("admit %s: %v", high, r.Err)
	}
	// Full now: a proposed admission is rejected by the hook.
	r := k.apply(low, "acme", 0, &fsm.JobAdmitted{})
	if r.Outcome != fsm.OutcomeRejected || !errors.Is(r.Err, fsm.ErrOverQuota) {
		t.Fatalf("admission over the limit: %s %v", r.Outcome, r.Err)
	}
	// The running job ends: room for one more.
	if r := k.apply(running, "acme", 2, &fsm.JobCancellationRequested{Reason: "done"}); r.Outcome != fsm.OutcomeApplied {
		t.Fatalf("cancel: %v", r.Err)
	}
	k.view(func(tx fsm.ReadTx) {
		u, _ := Count(tx, "acme", "", 0)
		// A cancelling job still holds its slot until its regions ack.
		if u.Active != 2 {
			t.Fatalf("active %d, want 2 (the cancelling job holds its slot)", u.Active)
		}
	})
	if r := k.apply(running, "acme", 0, &fsm.JobCancellationAcked{Region: "use1", WorkflowsCancelled: 1}); r.Outcome != fsm.OutcomeApplied {
		t.Fatalf("ack: %v", r.Err)
	}
	k.view(func(tx fsm.ReadTx) {
		adm, _ := Admissions(tx, "acme", 1_800_000_000_000, nil)
		if len(adm) != 1 || adm[0].JobID != older {
			t.Fatalf("after the slot freed: %v, want %s", ids(adm), older)
		}
		// skip refuses it (a throttle): the next best, then none.
		adm, _ = Admissions(tx, "acme", 1_800_000_000_000, func(s *fsm.JobState) (bool, error) { return s.JobID == older, nil })
		if len(adm) != 1 || adm[0].JobID != low {
			t.Fatalf("with %s skipped: %v, want %s", older, ids(adm), low)
		}
	})
}

func ids(ss []*fsm.JobState) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.JobID)
	}
	return out
}

func TestPolicy_EncodeIsCompactJSON(t *testing.T) {
	v, err := (&Policy{Tenant: "acme", MaxActive: 2}).Encode()
	if err != nil || string(v) != `{"tenant":"acme","max_active":2}` || !json.Valid(v) {
		t.Fatalf("%s %v", v, err)
	}
	_ = fmt.Sprint
}

// A job held by a rate limit (eligible_at_ms) is not planned before its
// time, and the ledger refuses an admission stamped before it.
func TestAdmissions_EligibleTime(t *testing.T) {
	k := newKit(t)
	id := fsm.JobID{Region: "use1", UnixMs: 1_700_000_000_000, Gate: "gate1", Seq: 1}.String()
	spec := fsmtest.Spec("acme", "use1")
	spec.Held, spec.Admission, spec.EligibleAtMs = true, fsm.AdmissionQueue, 1_700_000_000_500
	if r := k.apply(id, "acme", 1, &fsm.JobCreated{Spec: spec, AssignedRegions: spec.Regions}); r.Outcome != fsm.OutcomeApplied {
		t.Fatalf("create: %v", r.Err)
	}
	k.view(func(tx fsm.ReadTx) {
		if adm, _ := Admissions(tx, "acme", 1_700_000_000_499, nil); len(adm) != 0 {
			t.Fatalf("planned before its eligible time: %v", ids(adm))
		}
		if adm, _ := Admissions(tx, "acme", 1_700_000_000_500, nil); len(adm) != 1 {
			t.Fatalf("not planned at its eligible time: %v", ids(adm))
		}
	})
	// k.apply stamps HLC wall 1_700_000_000_000+n: well before 500 ms.
	if r := k.apply(id, "acme", 0, &fsm.JobAdmitted{}); r.Outcome != fsm.OutcomeRejected || !errors.Is(r.Err, fsm.ErrOverQuota) {
		t.Fatalf("early admission: %s %v", r.Outcome, r.Err)
	}
	k.n = 600 // the next event's HLC wall is past the eligible time
	if r := k.apply(id, "acme", 0, &fsm.JobAdmitted{}); r.Outcome != fsm.OutcomeApplied {
		t.Fatalf("admission at its time: %s %v", r.Outcome, r.Err)
	}
}

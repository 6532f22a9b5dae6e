package throttle

import (
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

func TestTarget_KeysAndValidation(t *testing.T) {
	tests := []struct {
		t     Target
		key   string
		valid bool
	}{
		{Target{Tenant: "acme"}, "t:acme", true},
		{Target{JobType: "render"}, "j:render", true},
		{Target{Tenant: "acme", JobType: "render"}, "t:acme/j:render", true},
		{Target{}, "", false},
		{Target{Tenant: "a b"}, "t:a b", false},
	}
	for _, tt := range tests {
		if got := tt.t.Key(); got != tt.key {
			t.Errorf("%+v: key %q, want %q", tt.t, got, tt.key)
		}
		if err := tt.t.Validate(); (err == nil) != tt.valid {
			t.Errorf("%+v: %v, want valid %v", tt.t, err, tt.valid)
		}
		if tt.valid && !fsm.IsPolicyKey(tt.key) {
			t.Errorf("%q is not a governance key", tt.key)
		}
	}
}

// A pause of the tenant, of the job type, or of the tenant's job type
// pauses a job; nothing else does.
func TestPaused(t *testing.T) {
	led, err := fsm.New(fsm.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	n := uint64(0)
	pause := func(tg Target) {
		n++
		v, _ := Encode(tg)
		e := fsmtest.NewEvent(fsmtest.ID(n), "", tg.Tenant, "use1", "g1", fsmtest.TS(1_700_000_000_000+int64(n), 0, 1), 0,
			&fsm.PolicySet{Kind: Kind, Key: tg.Key(), Value: v, Reason: "r", Ticket: "T"})
		if res, err := led.Apply(n, []fsm.Event{e}); err != nil || res[0].Outcome != fsm.OutcomeApplied {
			t.Fatalf("pause %+v: %v %+v", tg, err, res)
		}
	}
	pause(Target{Tenant: "acme"})
	pause(Target{JobType: "render"})
	pause(Target{Tenant: "globex", JobType: "encode"})
	cases := []struct {
		tenant, jobType string
		want            bool
	}{
		{"acme", "", true}, {"acme", "x", true}, {"globex", "", false}, {"globex", "render", true},
		{"globex", "encode", true}, {"initech", "encode", false}, {"initech", "", false},
	}
	err = led.View(func(tx fsm.ReadTx) error {
		for _, c := range cases {
			if got, err := Paused(tx, c.tenant, c.jobType); err != nil || got != c.want {
				t.Errorf("Paused(%s, %q) = %v (%v), want %v", c.tenant, c.jobType, got, err, c.want)
			}
		}
		all, err := List(tx, func(string) bool { return true })
		if err != nil || len(all) != 3 {
			t.Errorf("list: %d (%v)", len(all), err)
		}
		mine, _ := List(tx, func(tenant string) bool { return tenant == "acme" })
		if len(mine) != 2 { // acme's own and the fleet-wide job type pause
			t.Errorf("acme sees %d pauses, want 2: %+v", len(mine), mine)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package lifecycle

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/memstore"
)

func TestConfig_ValidateNamesWhatIsMissing(t *testing.T) {
	st := memstore.New()
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		global bool
		edit   func(*Config)
		want   string // "" valid; else the missing field
	}{
		{name: "manager", edit: func(*Config) {}},
		{name: "gate without manager fields", global: true, edit: func(c *Config) {
			c.Positions, c.WorkerAckWindow, c.BreakerCooldown, c.GlobalGroup = nil, 0, 0, ""
		}},
		{name: "no store", edit: func(c *Config) { c.Store = nil }, want: "Store"},
		{name: "no submitter", edit: func(c *Config) { c.Submitter = nil }, want: "Submitter"},
		{name: "no deliverer", edit: func(c *Config) { c.Deliverer = nil }, want: "Deliverer"},
		{name: "no leadership", edit: func(c *Config) { c.Leadership = nil }, want: "Leadership"},
		{name: "no applied", edit: func(c *Config) { c.Applied = nil }, want: "Applied"},
		{name: "no clock", edit: func(c *Config) { c.Stamper = nil }, want: "Stamper"},
		{name: "manager without positions", edit: func(c *Config) { c.Positions = nil }, want: "Positions"},
		{name: "manager without the global group", edit: func(c *Config) { c.GlobalGroup = "" }, want: "GlobalGroup"},
		{name: "no interval", edit: func(c *Config) { c.ReconcileInterval = 0 }, want: "ReconcileInterval"},
		{name: "manager without ack window", edit: func(c *Config) { c.WorkerAckWindow = 0 }, want: "WorkerAckWindow"},
		{name: "manager without cooldown", edit: func(c *Config) { c.BreakerCooldown = 0 }, want: "BreakerCooldown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(tc.global, "use1", st, led, time.Now)
			cfg.Now = nil
			tc.edit(&cfg)
			l, err := New(cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.want == "":
				if l.cfg.Now == nil || l.cfg.Logger == nil || l.cfg.Registerer == nil {
					t.Fatalf("defaults not filled: %+v", l.cfg)
				}
			case !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("New: %v, want ErrInvalidConfig naming %s", err, tc.want)
			}
		})
	}
}

// A new Lifecycle serves an empty lease view and no forwarder status
// until a term publishes them.
func TestLifecycle_StartsWithAnEmptyViewAndNoForwarder(t *testing.T) {
	st := memstore.New()
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(testConfig(false, "use1", st, led, time.Now))
	if err != nil {
		t.Fatal(err)
	}
	if v := l.CurrentView(); v == nil || v.Index != 0 || len(v.Leases) != 0 {
		t.Fatalf("view %+v, want empty", v)
	}
	if st, ok := l.ForwarderStatus(); ok {
		t.Fatalf("forwarder status %+v outside a term", st)
	}
	l.PublishView(&View{Index: 7})
	if v := l.LeaseView(t.Context(), 6); v.Index != 7 {
		t.Fatalf("LeaseView after 6: index %d, want 7", v.Index)
	}
	l.Touch("w1")
	if _, ok := l.LastHeard("w1"); !ok {
		t.Fatal("Touch not recorded")
	}
	l.Forget("w1")
	if _, ok := l.LastHeard("w1"); ok {
		t.Fatal("Forget not recorded")
	}
}

package govern

import (
	"testing"
	"time"
)

// step is one input of a breaker transcript: an outcome (o: "ok" or
// "fail"), a tick, or an operator's force ("open", "close"), at atMs, and
// the state wanted after it.
type step struct {
	atMs int64
	do   string
	want BreakerState
	// moved says whether the step must report a transition.
	moved bool
}

func runSteps(t *testing.T, c BreakerConfig, steps []step) {
	t.Helper()
	var b Breaker
	for i, s := range steps {
		var moved bool
		switch s.do {
		case "ok", "fail":
			_, moved = b.Observe(c, s.atMs, s.do == "fail")
		case "tick":
			_, moved = b.Tick(c, s.atMs)
		case "open", "close":
			tr := b.Force(s.do == "open", s.atMs, "operator")
			moved = tr.From != tr.To
		default:
			t.Fatalf("step %d: unknown %q", i, s.do)
		}
		if b.State != s.want || moved != s.moved {
			t.Fatalf("step %d (%s at %d ms): state %s moved %v, want %s moved %v", i, s.do, s.atMs, b.State, moved, s.want, s.moved)
		}
	}
}

func TestBreaker_Transitions(t *testing.T) {
	c := BreakerConfig{Window: 10 * time.Second, Buckets: 10, MinSamples: 5, FailureRate: 0.6, CoolDown: 5 * time.Second, Probes: 2}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	const C, O, H = BreakerClosed, BreakerOpen, BreakerHalfOpen
	tests := []struct {
		name  string
		steps []step
	}{
		{"below min samples never trips", []step{
			{0, "fail", C, false}, {1, "fail", C, false}, {2, "fail", C, false}, {3, "fail", C, false},
		}},
		{"60 percent of 5 trips", []step{
			{0, "ok", C, false}, {1, "fail", C, false}, {2, "ok", C, false}, {3, "fail", C, false}, {4, "fail", O, true},
		}},
		{"40 percent does not trip", []step{
			{0, "ok", C, false}, {1, "ok", C, false}, {2, "ok", C, false}, {3, "fail", C, false}, {4, "fail", C, false},
		}},
		{"old outcomes leave the window", []step{
			{0, "fail", C, false}, {1, "fail", C, false}, {2, "fail", C, false}, {3, "fail", C, false},
			{20_000, "fail", C, false}, // 1 in the window: the first four aged out
			{20_001, "fail", C, false}, {20_002, "fail", C, false}, {20_003, "fail", C, false}, {20_004, "fail", O, true},
		}},
		{"open half-opens after cool-down, probes close it", []step{
			{0, "fail", C, false}, {0, "fail", C, false}, {0, "fail", C, false}, {0, "fail", C, false}, {0, "fail", O, true},
			{4_999, "tick", O, false}, {5_000, "tick", H, true},
			{5_100, "ok", H, false}, {5_200, "ok", C, true},
		}},
		{"a failed probe reopens, and the cool-down restarts", []step{
			{0, "fail", C, false}, {0, "fail", C, false}, {0, "fail", C, false}, {0, "fail", C, false}, {0, "fail", O, true},
			{5_000, "tick", H, true}, {5_100, "fail", O, true},
			{9_000, "tick", O, false}, {10_100, "tick", H, true},
		}},
		{"outcomes while open are ignored", []step{
			{0, "fail", C, false}, {0, "fail", C, false}, {0, "fail", C, false}, {0, "fail", C, false}, {0, "fail", O, true},
			{100, "ok", O, false}, {200, "fail", O, false},
		}},
		{"forced open stays open past the cool-down", []step{
			{0, "open", O, true}, {60_000, "tick", O, false}, {60_001, "close", C, true}, {60_002, "tick", C, false},
		}},
		{"forced close empties the window", []step{
			{0, "fail", C, false}, {0, "fail", C, false}, {0, "fail", C, false}, {0, "fail", C, false}, {0, "fail", O, true},
			{1, "close", C, true}, {2, "fail", C, false}, {3, "fail", C, false},
		}},
		{"forcing open a tripped breaker holds it", []step{
			{0, "fail", C, false}, {0, "fail", C, false}, {0, "fail", C, false}, {0, "fail", C, false}, {0, "fail", O, true},
			{1, "open", O, false}, {10_000, "tick", O, false},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, c, tc.steps) })
	}
}

func TestBreaker_Admit(t *testing.T) {
	c := BreakerConfig{Probes: 3}.WithDefaults()
	tests := []struct {
		name    string
		state   BreakerState
		running int
		want    int
	}{
		{"closed is unlimited", BreakerClosed, 100, -1},
		{"open admits none", BreakerOpen, 0, 0},
		{"half-open admits what probes leave", BreakerHalfOpen, 1, 2},
		{"half-open full", BreakerHalfOpen, 5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := Breaker{State: tc.state}
			if got := b.Admit(c, tc.running); got != tc.want {
				t.Fatalf("Admit = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestBreaker_RestoreKeepsWindowOnlyForSameState(t *testing.T) {
	c := BreakerConfig{Window: 10 * time.Second, Buckets: 10, MinSamples: 3, FailureRate: 1, CoolDown: time.Second, Probes: 1}
	var b Breaker
	b.Observe(c, 0, true)
	b.Observe(c, 1, true)
	b.Restore(BreakerClosed, 0, false) // the ledger agrees: window kept
	if _, moved := b.Observe(c, 2, true); !moved || b.State != BreakerOpen {
		t.Fatalf("third failure after a same-state restore: state %s", b.State)
	}
	b.Restore(BreakerClosed, 50, false) // an operator closed it meanwhile
	b.Observe(c, 60, true)
	if _, moved := b.Observe(c, 61, true); moved {
		t.Fatal("window survived a restore to another state")
	}
}

func TestBreakerConfig_Validate(t *testing.T) {
	tests := []struct {
		name string
		c    BreakerConfig
		ok   bool
	}{
		{"defaults", BreakerConfig{}.WithDefaults(), true},
		{"rate above 1", BreakerConfig{FailureRate: 1.5}.WithDefaults(), false},
		{"negative rate", BreakerConfig{FailureRate: -0.1}.WithDefaults(), false},
		{"too many buckets", BreakerConfig{Buckets: 1000}.WithDefaults(), false},
		{"window too long", BreakerConfig{Window: 2 * time.Hour}.WithDefaults(), false},
		{"negative probes", BreakerConfig{Probes: -1}.WithDefaults(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.c.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestBreakerState_Names(t *testing.T) {
	for _, s := range []BreakerState{BreakerClosed, BreakerOpen, BreakerHalfOpen} {
		p, err := ParseBreakerState(s.String())
		if err != nil || p != s {
			t.Fatalf("ParseBreakerState(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := ParseBreakerState("ajar"); err == nil {
		t.Fatal("unknown state parsed")
	}
}

// BenchmarkBreaker_Observe is the cost the regional leader pays per
// workflow outcome it counts.
func BenchmarkBreaker_Observe(b *testing.B) {
	c := BreakerConfig{MinSamples: 1 << 30}.WithDefaults() // never trips: every call does the full count
	var br Breaker
	now := int64(1_700_000_000_000)
	b.ReportAllocs()
	for b.Loop() {
		now += 7
		br.Observe(c, now, now%3 == 0)
	}
}

// BenchmarkBackoff is the cost of one retry's delay (a seeded PCG draw).
func BenchmarkBackoff(b *testing.B) {
	p := RetryPolicy{MaxAttempts: 10}.WithDefaults()
	b.ReportAllocs()
	n := uint32(0)
	for b.Loop() {
		n++
		Backoff(p, n%10+1, Seed("use1-1700000000000-g1-00001/use1/load/7", n))
	}
}

package govern

import (
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		msg  string
		want Cause
	}{
		{"every simulated request failed (100 of 100)", CauseError},
		{"upstream timeout after 30s", CauseTimeout},
		{"context deadline exceeded", CauseTimeout},
		{"Permanent: bad target URL", CausePermanent},
		{"", CauseError},
	}
	for _, tc := range tests {
		if got := Classify(tc.msg); got != tc.want {
			t.Errorf("Classify(%q) = %s, want %s", tc.msg, got, tc.want)
		}
	}
}

func TestRetryable(t *testing.T) {
	tests := []struct {
		name string
		c    Cause
		on   []string
		want bool
	}{
		{"default retries errors", CauseError, nil, true},
		{"default retries timeouts", CauseTimeout, nil, true},
		{"permanent never", CausePermanent, []string{"worker_error", "timeout", "permanent"}, false},
		{"only timeouts", CauseError, []string{"timeout"}, false},
		{"listed", CauseError, []string{"worker_error"}, true},
		{"a cause never produced matches nothing", CauseError, []string{"lease_expired"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Retryable(tc.c, tc.on); got != tc.want {
				t.Fatalf("Retryable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBackoff_GrowsCapsAndJittersWithinBounds(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 10, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	tests := []struct {
		n        uint32
		lo, hi   time.Duration
		wantBase time.Duration
	}{
		{1, 50 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond},
		{2, 100 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond},
		{3, 200 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond},
		{4, 400 * time.Millisecond, 800 * time.Millisecond, 800 * time.Millisecond},
		{5, 500 * time.Millisecond, time.Second, time.Second}, // capped
		{40, 500 * time.Millisecond, time.Second, time.Second},
	}
	for _, tc := range tests {
		spread := map[time.Duration]bool{}
		for seed := uint64(0); seed < 200; seed++ {
			d := Backoff(p, tc.n, seed)
			if d < tc.lo || d > tc.hi {
				t.Fatalf("Backoff(n=%d, seed=%d) = %s outside [%s, %s]", tc.n, seed, d, tc.lo, tc.hi)
			}
			spread[d] = true
		}
		if len(spread) < 50 {
			t.Fatalf("n=%d: 200 seeds gave only %d distinct delays: no jitter", tc.n, len(spread))
		}
	}
}

func TestBackoff_SameSeedSameDelay(t *testing.T) {
	p := RetryPolicy{InitialBackoff: time.Second}.WithDefaults()
	s := Seed("job/use1/checkout/0", 2)
	if a, b := Backoff(p, 2, s), Backoff(p, 2, s); a != b {
		t.Fatalf("same seed: %s then %s", a, b)
	}
	if Seed("job/use1/checkout/0", 2) == Seed("job/use1/checkout/0", 3) {
		t.Fatal("seed ignores the attempt")
	}
}

func TestDecideRetry(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Second, MaxBackoff: 10 * time.Second}
	tests := []struct {
		name    string
		p       RetryPolicy
		attempt uint32
		msg     string
		retry   bool
		next    uint32
		cause   Cause
	}{
		{"first failure retried", p, 1, "every simulated request failed", true, 2, CauseError},
		{"second failure retried", p, 2, "timeout", true, 3, CauseTimeout},
		{"third failure exhausts", p, 3, "boom", false, 0, CauseError},
		{"permanent not retried", p, 1, "permanent: bad spec", false, 0, CausePermanent},
		{"no policy never retries", RetryPolicy{}.WithDefaults(), 1, "boom", false, 0, CauseError},
		{"cause outside retry_on", RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Second, MaxBackoff: time.Second, RetryOn: []string{"timeout"}}, 1, "boom", false, 0, CauseError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideRetry(tc.p, "wf", tc.attempt, tc.msg, 1_000_000)
			if d.Retry != tc.retry || d.Attempt != tc.next || d.Cause != tc.cause {
				t.Fatalf("DecideRetry = %+v, want retry %v attempt %d cause %s", d, tc.retry, tc.next, tc.cause)
			}
			if d.Retry {
				lo := int64(1_000_000) + (tc.p.InitialBackoff / 2).Milliseconds()
				if d.NotBeforeMs < lo || d.NotBeforeMs > 1_000_000+tc.p.MaxBackoff.Milliseconds() {
					t.Fatalf("not before %d outside the backoff", d.NotBeforeMs)
				}
			} else if d.Why == "" {
				t.Fatal("a refusal without a reason")
			}
		})
	}
}

func TestRetryPolicy_Validate(t *testing.T) {
	tests := []struct {
		name string
		p    RetryPolicy
		ok   bool
	}{
		{"defaults", RetryPolicy{MaxAttempts: 3}.WithDefaults(), true},
		{"too many attempts", RetryPolicy{MaxAttempts: 1000}.WithDefaults(), false},
		{"max below initial", RetryPolicy{InitialBackoff: time.Minute, MaxBackoff: time.Second}, false},
		{"unknown cause", RetryPolicy{RetryOn: []string{"cosmic_ray"}}.WithDefaults(), false},
		{"permanent is not a retry_on cause", RetryPolicy{RetryOn: []string{"permanent"}}.WithDefaults(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.p.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

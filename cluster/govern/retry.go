package govern

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"time"
)

// Cause is the class of a workflow failure, named in the job's history
// and matched against a retry policy's retry_on list.
type Cause string

// Failure causes. A worker's failure message is classified by Classify.
const (
	// CauseError: the worker reported the workflow failed (the reference
	// worker: every simulated request failed) and said nothing more
	// precise. A worker that goes silent does not fail its workflows: they
	// are rescheduled (WorkflowRescheduled) and no attempt is spent.
	CauseError Cause = "worker_error"
	// CauseTimeout: the worker reports a timeout or a deadline exceeded.
	CauseTimeout Cause = "timeout"
	// CausePermanent: the worker says retrying cannot help (a message
	// starting "permanent:"). Never retried, whatever retry_on says.
	CausePermanent Cause = "permanent"
)

// Causes lists the causes a retry_on list may usefully name (the gate
// accepts any name; one that is never produced matches nothing).
// ExhaustedWhy starts a RetryDecision's Why when a workflow's attempts
// ran out; the region's JobFailed error quotes it, and the gates' job
// metrics find the cause by it (cluster/lifecycle/jobmetrics.go).
const ExhaustedWhy = "attempts exhausted"

func Causes() []Cause { return []Cause{CauseError, CauseTimeout} }

// DefaultRetryOn is what a policy without retry_on retries.
var DefaultRetryOn = []Cause{CauseError, CauseTimeout}

// Classify returns the cause of a workflow failure from the worker's
// message: "permanent:" first, then a timeout, else a plain error.
func Classify(msg string) Cause {
	m := strings.ToLower(strings.TrimSpace(msg))
	switch {
	case strings.HasPrefix(m, "permanent:"):
		return CausePermanent
	case strings.Contains(m, "timeout"), strings.Contains(m, "timed out"), strings.Contains(m, "deadline exceeded"):
		return CauseTimeout
	}
	return CauseError
}

// Retryable reports whether a failure of cause c is retried under a
// policy whose retry_on is on (empty: every cause but permanent, i.e.
// DefaultRetryOn, as the spec documents).
func Retryable(c Cause, on []string) bool {
	if c == CausePermanent {
		return false
	}
	if len(on) == 0 {
		for _, d := range DefaultRetryOn {
			if c == d {
				return true
			}
		}
		return false
	}
	for _, o := range on {
		if Cause(o) == c {
			return true
		}
	}
	return false
}

// Limits of a RetryPolicy.
const (
	MaxAttempts   = 100
	MaxBackoff    = time.Hour
	MinBackoff    = time.Millisecond
	DefaultJitter = 0.5 // share of the delay drawn at random
)

// RetryPolicy is how a job's failed workflows are retried: at most
// MaxAttempts runs in all (0 or 1: never retried), the n-th retry after
// InitialBackoff × 2^(n-1), capped at MaxBackoff, the upper half of it
// drawn at random ("equal jitter", so retries of many workflows that
// failed together spread out but none comes back sooner than half its
// delay).
type RetryPolicy struct {
	MaxAttempts    uint32
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	RetryOn        []string
}

// WithDefaults fills a zero InitialBackoff (1 s) and MaxBackoff (60 s,
// or InitialBackoff if larger).
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.InitialBackoff == 0 {
		p.InitialBackoff = time.Second
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = max(time.Minute, p.InitialBackoff)
	}
	return p
}

// Validate checks a policy after WithDefaults.
func (p RetryPolicy) Validate() error {
	switch {
	case p.MaxAttempts > MaxAttempts:
		return fmt.Errorf("max_attempts %d above %d", p.MaxAttempts, MaxAttempts)
	case p.InitialBackoff < MinBackoff || p.InitialBackoff > MaxBackoff:
		return fmt.Errorf("initial_backoff %s outside [%s, %s]", p.InitialBackoff, MinBackoff, MaxBackoff)
	case p.MaxBackoff < p.InitialBackoff || p.MaxBackoff > MaxBackoff:
		return fmt.Errorf("max_backoff %s outside [initial_backoff, %s]", p.MaxBackoff, MaxBackoff)
	}
	for _, o := range p.RetryOn {
		if !knownCause(Cause(o)) {
			return fmt.Errorf("retry_on: unknown cause %q", o)
		}
	}
	return nil
}

func knownCause(c Cause) bool {
	for _, k := range Causes() {
		if c == k {
			return true
		}
	}
	return false
}

// Backoff returns the delay before retry n (1 for the first retry) under
// p, drawn from a source seeded with seed: the same arguments always give
// the same delay, so every leader plans the same retry.
func Backoff(p RetryPolicy, n uint32, seed uint64) time.Duration {
	base := p.InitialBackoff
	for i := uint32(1); i < n && base < p.MaxBackoff; i++ {
		base *= 2
	}
	base = min(base, p.MaxBackoff)
	fixed := time.Duration(float64(base) * (1 - DefaultJitter))
	spread := base - fixed
	if spread <= 0 {
		return base
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return fixed + time.Duration(r.Int64N(int64(spread)+1))
}

// Seed derives a backoff seed from a workflow and its attempt.
func Seed(workflow string, attempt uint32) uint64 {
	h := fnv.New64a()
	h.Write([]byte(workflow))
	h.Write([]byte{byte(attempt), byte(attempt >> 8), byte(attempt >> 16), byte(attempt >> 24)})
	return h.Sum64()
}

// RetryDecision is what to do with a failed workflow.
type RetryDecision struct {
	Retry       bool
	Attempt     uint32 // the attempt the retry will be (2 for the first retry)
	Cause       Cause
	NotBeforeMs int64  // earliest lease of the retry (Unix ms)
	Why         string // why not, when Retry is false
}

// DecideRetry decides whether workflow's attempt (1 for its first run),
// which failed at failedAtMs with message msg, is retried under p.
func DecideRetry(p RetryPolicy, workflow string, attempt uint32, msg string, failedAtMs int64) RetryDecision {
	c := Classify(msg)
	d := RetryDecision{Cause: c}
	switch {
	case !Retryable(c, p.RetryOn):
		d.Why = fmt.Sprintf("cause %s is not retryable", c)
	case attempt >= p.MaxAttempts:
		d.Why = fmt.Sprintf("%s (%d of %d)", ExhaustedWhy, attempt, max(p.MaxAttempts, 1))
	default:
		d.Retry, d.Attempt = true, attempt+1
		d.NotBeforeMs = failedAtMs + Backoff(p, attempt, Seed(workflow, attempt)).Milliseconds()
	}
	return d
}

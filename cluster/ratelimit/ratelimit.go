// Package ratelimit is a token bucket (issue 18 §1): per-token API rate
// limits on each node. (A quota's max_per_hour is not kept here: it must
// be one bucket for the whole cluster, so it is a rate meter of the
// global ledger, cluster/quota's MeterHook.) The bucket is pure — time is an argument, no
// clock is read — so it is tested with a fake clock; Limiter keeps one
// bucket per key, bounded in count.
//
// A bucket holds at most Burst tokens and refills at Rate tokens per
// second; Take takes one or says how long until one is there. Nothing is
// replicated: each node keeps its own buckets (a client spreading its
// calls over n nodes gets up to n times the rate), and a restart refills
// them.
package ratelimit

import (
	"math"
	"sync"
	"time"
)

// Bucket is one token bucket. The zero value is unusable: make it with
// NewBucket. Not safe for concurrent use (Limiter locks).
type Bucket struct {
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time
}

// NewBucket returns a full bucket of burst tokens refilled at rate per
// second, as of now. A rate of 0 never refills.
func NewBucket(rate, burst float64, now time.Time) *Bucket {
	return &Bucket{rate: rate, burst: burst, tokens: burst, last: now}
}

// refill adds the tokens earned since the last call (never more than
// burst; a clock that went back earns nothing).
func (b *Bucket) refill(now time.Time) {
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = math.Min(b.burst, b.tokens+dt*b.rate)
		b.last = now
	}
}

// Take takes one token at now: true if there was one; otherwise false
// and the wait until there will be (math.MaxInt64 ns if the bucket never
// refills).
func (b *Bucket) Take(now time.Time) (bool, time.Duration) {
	b.refill(now)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	if b.rate <= 0 {
		return false, time.Duration(math.MaxInt64)
	}
	wait := time.Duration(math.Ceil((1 - b.tokens) / b.rate * float64(time.Second)))
	return false, wait
}

// Tokens returns the tokens at now (for status reads).
func (b *Bucket) Tokens(now time.Time) float64 {
	b.refill(now)
	return b.tokens
}

// DefaultMaxKeys bounds the buckets a Limiter keeps.
const DefaultMaxKeys = 100_000

// Limiter keeps a bucket per key (a token, a tenant). When it holds
// MaxKeys buckets, a new key first drops the buckets that are full again
// (idle keys: dropping one changes nothing, it would be made full); if
// none is, the new key is refused (the caller answers 429) rather than
// growing without bound. Safe for concurrent use.
type Limiter struct {
	mu      sync.Mutex
	buckets map[string]*Bucket
	maxKeys int
}

// NewLimiter returns a limiter of at most maxKeys buckets (0: the
// default).
func NewLimiter(maxKeys int) *Limiter {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	return &Limiter{buckets: map[string]*Bucket{}, maxKeys: maxKeys}
}

// Take takes a token of key's bucket at now, making the bucket (rate,
// burst) if key has none. A bucket whose rate or burst changed since it
// was made is remade full (a policy change starts afresh).
func (l *Limiter) Take(key string, rate, burst float64, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b != nil && (b.rate != rate || b.burst != burst) {
		b = nil
	}
	if b == nil {
		if len(l.buckets) >= l.maxKeys {
			l.dropFull(now)
			if len(l.buckets) >= l.maxKeys {
				return false, time.Second
			}
		}
		b = NewBucket(rate, burst, now)
		l.buckets[key] = b
	}
	return b.Take(now)
}

// dropFull forgets the buckets that are full at now.
func (l *Limiter) dropFull(now time.Time) {
	for k, b := range l.buckets {
		if b.Tokens(now) >= b.burst {
			delete(l.buckets, k)
		}
	}
}

// Len returns the buckets kept.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

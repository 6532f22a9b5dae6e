package ratelimit

import (
	"testing"
	"time"
)

func TestBucket_FakeClock(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	b := NewBucket(2, 3, t0) // 2 per second, burst 3
	steps := []struct {
		name string
		ms   int
		ok   bool
		wait time.Duration
	}{
		{"burst 1", 0, true, 0},
		{"burst 2", 0, true, 0},
		{"burst 3", 0, true, 0},
		{"empty", 0, false, 500 * time.Millisecond},
		{"half a token later", 250, false, 250 * time.Millisecond},
		{"one token later", 500, true, 0},
		{"empty again", 500, false, 500 * time.Millisecond},
		{"clock back earns nothing", 100, false, 500 * time.Millisecond},
		{"long idle refills to burst only", 60_000, true, 0},
		{"second of the refill", 60_000, true, 0},
		{"third of the refill", 60_000, true, 0},
		{"burst spent", 60_000, false, 500 * time.Millisecond},
	}
	for _, s := range steps {
		ok, wait := b.Take(at(s.ms))
		if ok != s.ok || wait != s.wait {
			t.Fatalf("%s: take = %v, wait %v; want %v, %v", s.name, ok, wait, s.ok, s.wait)
		}
	}
}

func TestBucket_ZeroRateNeverRefills(t *testing.T) {
	t0 := time.Unix(0, 0)
	b := NewBucket(0, 1, t0)
	if ok, _ := b.Take(t0); !ok {
		t.Fatal("the burst token was refused")
	}
	if ok, wait := b.Take(t0.Add(time.Hour)); ok || wait < time.Hour {
		t.Fatalf("take = %v, wait %v: a bucket without rate refilled", ok, wait)
	}
}

func TestLimiter_KeysAreIndependentAndBounded(t *testing.T) {
	t0 := time.Unix(0, 0)
	l := NewLimiter(2)
	if ok, _ := l.Take("a", 1, 1, t0); !ok {
		t.Fatal("a refused")
	}
	if ok, _ := l.Take("a", 1, 1, t0); ok {
		t.Fatal("a's second token in the same instant was granted")
	}
	if ok, _ := l.Take("b", 1, 1, t0); !ok {
		t.Fatal("b refused: keys share a bucket")
	}
	// Full of keys, none idle: a new key is refused, not added.
	if ok, wait := l.Take("c", 1, 1, t0); ok || wait <= 0 || l.Len() != 2 {
		t.Fatalf("c: %v %v with %d keys", ok, wait, l.Len())
	}
	// A second later a and b are full again: they make room for c.
	if ok, _ := l.Take("c", 1, 1, t0.Add(time.Second)); !ok || l.Len() != 1 {
		t.Fatalf("c after the idle keys refilled: %v with %d keys", ok, l.Len())
	}
	// A changed policy remakes the bucket full.
	l.Take("c", 1, 1, t0.Add(time.Second))
	if ok, _ := l.Take("c", 5, 5, t0.Add(time.Second)); !ok {
		t.Fatal("a new rate did not start a fresh bucket")
	}
}

func BenchmarkLimiter_Take(b *testing.B) {
	l := NewLimiter(0)
	now := time.Unix(0, 0)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Microsecond)
		l.Take("token", 1e9, 1e9, now)
	}
}

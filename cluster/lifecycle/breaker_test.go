package lifecycle

import (
	"testing"
	"time"
)

func TestBreaker_OpensAfterFiveFailuresAndProbesAfterCooldown(t *testing.T) {
	var transitions []string
	b := newBreaker(30*time.Second, func(from, to breakerState) { transitions = append(transitions, from.String()+">"+to.String()) })
	t0 := time.Unix(1000, 0)
	for i := range breakerThreshold - 1 {
		if !b.allow(t0) {
			t.Fatalf("closed breaker refused call %d", i)
		}
		b.failure(t0)
	}
	if st, _ := b.State(); st != breakerClosed {
		t.Fatalf("opened after %d failures", breakerThreshold-1)
	}
	b.failure(t0)
	if st, until := b.State(); st != breakerOpen || !until.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("state %s until %v", st, until)
	}
	if b.allow(t0.Add(29 * time.Second)) {
		t.Fatal("open breaker allowed a call before the cooldown")
	}
	if !b.allow(t0.Add(30 * time.Second)) {
		t.Fatal("no probe after the cooldown")
	}
	if b.allow(t0.Add(30 * time.Second)) {
		t.Fatal("half-open breaker allowed a second call while probing")
	}
	b.failure(t0.Add(31 * time.Second)) // the probe failed: open again
	if b.allow(t0.Add(60 * time.Second)) {
		t.Fatal("reopened breaker allowed a call before its new cooldown")
	}
	if !b.allow(t0.Add(61 * time.Second)) {
		t.Fatal("no second probe")
	}
	b.success()
	if st, _ := b.State(); st != breakerClosed || !b.allow(t0.Add(61*time.Second)) {
		t.Fatalf("successful probe left the breaker %s", st)
	}
	want := []string{"closed>open", "open>half-open", "half-open>open", "open>half-open", "half-open>closed"}
	if len(transitions) != len(want) {
		t.Fatalf("transitions %v, want %v", transitions, want)
	}
	for i := range want {
		if transitions[i] != want[i] {
			t.Fatalf("transitions %v, want %v", transitions, want)
		}
	}
}

func TestBreaker_SuccessResetsTheFailureCount(t *testing.T) {
	b := newBreaker(time.Second, nil)
	now := time.Unix(0, 0)
	for range 3 {
		for range breakerThreshold - 1 {
			b.failure(now)
		}
		b.success()
	}
	if st, _ := b.State(); st != breakerClosed {
		t.Fatalf("non-consecutive failures opened the breaker: %s", st)
	}
}

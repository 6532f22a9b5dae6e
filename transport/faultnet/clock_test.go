package faultnet

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestClock_OffsetShiftsTheReading(t *testing.T) {
	var c Clock
	before := time.Now().UnixMilli()
	if got := c.UnixMilli(); got < before || got > time.Now().UnixMilli() {
		t.Fatalf("zero Clock reads %d, want the wall clock (%d..)", got, before)
	}
	if err := c.SetOffset(-3 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got, wall := c.UnixMilli(), time.Now().UnixMilli(); got > wall-3000 || got < before-3000 {
		t.Fatalf("Clock at -3s reads %d, wall %d", got, wall)
	}
}

func TestClock_OffsetIsBounded(t *testing.T) {
	var c Clock
	for _, d := range []time.Duration{MaxClockOffset + time.Millisecond, -MaxClockOffset - time.Millisecond} {
		if err := c.SetOffset(d); !errors.Is(err, ErrInvalidRule) {
			t.Errorf("SetOffset(%v) = %v, want ErrInvalidRule", d, err)
		}
	}
	if c.Offset() != 0 {
		t.Fatalf("a refused offset changed the clock to %v", c.Offset())
	}
	for _, d := range []time.Duration{MaxClockOffset, -MaxClockOffset, 0} {
		if err := c.SetOffset(d); err != nil || c.Offset() != d {
			t.Errorf("SetOffset(%v) = %v, offset %v", d, err, c.Offset())
		}
	}
}

func TestFaults_ReplaceSetsAndClearsTheClockOffset(t *testing.T) {
	var clock Clock
	f := newFaults(t, Config{Clock: &clock})
	if f.Clock() != &clock {
		t.Fatal("Faults does not act on the Clock it was given")
	}
	if err := f.Replace(Rules{ClockOffset: Duration(2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if clock.Offset() != 2*time.Second || f.Rules().ClockOffset != Duration(2*time.Second) {
		t.Fatalf("offset %v, rules %v; want 2s", clock.Offset(), f.Rules().ClockOffset)
	}
	// An invalid rule set changes nothing, the offset included.
	err := f.Replace(Rules{ClockOffset: Duration(MaxClockOffset + time.Second)})
	if !errors.Is(err, ErrInvalidRule) || clock.Offset() != 2*time.Second {
		t.Fatalf("Replace(11s) = %v, offset now %v", err, clock.Offset())
	}
	err = f.Replace(Rules{ClockOffset: Duration(-time.Second), Peers: []PeerRule{{Peer: "", Partitioned: true}}})
	if !errors.Is(err, ErrInvalidRule) || clock.Offset() != 2*time.Second {
		t.Fatalf("Replace with a bad peer = %v, offset now %v", err, clock.Offset())
	}
	// A rule set without the field heals the skew, as it heals peers.
	if err := f.Replace(Rules{}); err != nil || clock.Offset() != 0 {
		t.Fatalf("Replace({}) = %v, offset %v", err, clock.Offset())
	}
}

func TestHandler_ClockOffsetRoundTrip(t *testing.T) {
	var clock Clock
	f := newFaults(t, Config{Clock: &clock})
	srv := newRulesServer(t, f)
	resp, body := doRules(t, http.MethodPut, srv.URL, []byte(`{"clock_offset":"-1.5s"}`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %d %s", resp.StatusCode, body)
	}
	if clock.Offset() != -1500*time.Millisecond {
		t.Fatalf("offset %v after PUT, want -1.5s", clock.Offset())
	}
	_, body = doRules(t, http.MethodGet, srv.URL, nil)
	if want := `"clock_offset":"-1.5s"`; !strings.Contains(string(body), want) {
		t.Fatalf("GET %s, want it to hold %s", body, want)
	}
	resp, body = doRules(t, http.MethodPut, srv.URL, []byte(`{"clock_offset":"1m"}`))
	if resp.StatusCode != http.StatusBadRequest || clock.Offset() != -1500*time.Millisecond {
		t.Fatalf("PUT 1m: %d %s, offset %v", resp.StatusCode, body, clock.Offset())
	}
}

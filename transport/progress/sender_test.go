package progress

import (
	"errors"
	"testing"
)

// TestSender_SendsLatestOfHeldWorkflowsOnly: Set keeps the latest
// counters, Remove stops a workflow, an empty sender sends a keep-alive,
// Flush after Close fails.
func TestSender_SendsLatestOfHeldWorkflowsOnly(t *testing.T) {
	r, frames := startReceiver(t, Config{UDPAddr: "127.0.0.1:0"})
	s := newSender(t, "udp", r.UDPAddr().String())
	if err := s.Set(Update{Workflow: ""}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Set of an empty id: %v", err)
	}
	_ = s.Set(Update{Workflow: "a", Fence: 1, Completed: 1})
	_ = s.Set(Update{Workflow: "a", Fence: 1, Completed: 5})
	_ = s.Set(Update{Workflow: "b", Fence: 1, Completed: 7})
	s.Remove("b")
	n, err := s.Flush()
	if err != nil || n != 1 {
		t.Fatalf("Flush = %d, %v", n, err)
	}
	waitFrames(t, frames, 1)
	if got := r.Drain(); len(got) != 1 || got[0].Workflow != "a" || got[0].Completed != 5 {
		t.Fatalf("aggregates %+v", got)
	}
	s.Remove("a")
	if n, err := s.Flush(); err != nil || n != 1 {
		t.Fatalf("keep-alive Flush = %d, %v", n, err)
	}
	waitFrames(t, frames, 1)
	if got := counterValue(t, r.m.frames[ResultFolded]); got != 2 {
		t.Fatalf("frames folded %v, want 2", got)
	}
	s.Close()
	if _, err := s.Flush(); !errors.Is(err, ErrSenderClosed) {
		t.Fatalf("Flush after Close: %v", err)
	}
}

// TestSender_TCPRedialsAfterTheConnectionBreaks: a receiver restart on the
// same address costs one failed Flush, and the next one redials.
func TestSender_TCPRedialsAfterTheConnectionBreaks(t *testing.T) {
	r1, frames1 := startReceiver(t, Config{TCPAddr: "127.0.0.1:0"})
	addr := r1.TCPAddr().String()
	s := newSender(t, "tcp", addr)
	_ = s.Set(Update{Workflow: "a", Fence: 1, Completed: 1})
	if _, err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFrames(t, frames1, 1)
	r1.Close()
	r2, frames2 := startReceiver(t, Config{TCPAddr: addr})
	_ = s.Set(Update{Workflow: "a", Fence: 1, Completed: 2})
	var err error
	for range 100 { // a write to the dead connection fails once its RST is back
		if _, err = s.Flush(); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("no Flush failed on the closed connection")
	}
	if _, err := s.Flush(); err != nil {
		t.Fatalf("Flush after redial: %v", err)
	}
	waitFrames(t, frames2, 1)
	if p, _ := r2.Get("a", "w1"); p.Completed != 2 {
		t.Fatalf("aggregate %+v", p)
	}
}

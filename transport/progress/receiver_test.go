package progress

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// waitTimeout bounds every wait in these tests.
const waitTimeout = 10 * time.Second

// startReceiver starts a receiver on loopback whose fold goroutine reports
// each frame on the returned channel.
func startReceiver(t *testing.T, cfg Config) (*Receiver, <-chan struct{}) {
	t.Helper()
	if cfg.Keys == nil {
		cfg.Keys = keyMap{"w1": testKey}
	}
	if cfg.Leases == nil {
		cfg.Leases = holdAll()
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	frames := make(chan struct{}, 1024)
	r.afterFrame = func() { frames <- struct{}{} }
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, frames
}

// waitFrames waits until the fold goroutine has handled n more frames.
func waitFrames(t *testing.T, frames <-chan struct{}, n int) {
	t.Helper()
	timeout := time.After(waitTimeout)
	for i := range n {
		select {
		case <-frames:
		case <-timeout:
			t.Fatalf("%d of %d frames folded before the timeout", i, n)
		}
	}
}

func newSender(t *testing.T, network, addr string) *Sender {
	t.Helper()
	s, err := NewSender(SenderConfig{Encoder: EncoderConfig{Worker: "w1", KeyID: 7, Key: testKey}, Addr: addr, Network: network})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestReceiver_FoldsWhatTheSenderSends over UDP and over the TCP fallback:
// the aggregates equal the sender's latest counters and Drain returns them.
func TestReceiver_FoldsWhatTheSenderSends(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			cfg := Config{}
			if network == "udp" {
				cfg.UDPAddr = "127.0.0.1:0"
			} else {
				cfg.TCPAddr = "127.0.0.1:0"
			}
			r, frames := startReceiver(t, cfg)
			addr := r.UDPAddr()
			if network == "tcp" {
				addr = r.TCPAddr()
			}
			s := newSender(t, network, addr.String())
			for round := uint64(1); round <= 3; round++ {
				for i := range 200 {
					if err := s.Set(Update{Workflow: workflowID(1, i), Fence: 4, Completed: round * uint64(i), Failed: round, Histogram: Histogram{3: round}}); err != nil {
						t.Fatal(err)
					}
				}
				n, err := s.Flush()
				if err != nil {
					t.Fatal(err)
				}
				waitFrames(t, frames, n)
			}
			got := r.Drain()
			if len(got) != 200 {
				t.Fatalf("drained %d aggregates, want 200", len(got))
			}
			for _, p := range got {
				want, _ := r.Get(p.Workflow, "w1")
				if p.Completed != want.Completed || p.Failed != 3 || p.Fence != 4 || !slices.Equal(p.Histogram, Histogram{3: 3}) {
					t.Fatalf("aggregate %+v", p)
				}
			}
			if p, _ := r.Get(workflowID(1, 199), "w1"); p.Completed != 3*199 {
				t.Fatalf("aggregate %+v", p)
			}
			if got := counterValue(t, r.m.updates); got != 600 {
				t.Fatalf("updates_total %v, want 600", got)
			}
			if len(r.Drain()) != 0 {
				t.Fatal("second drain not empty")
			}
		})
	}
}

// counterValue reads a counter without prometheus/testutil (whose
// dependencies are not in go.sum).
func counterValue(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestReceiver_ForgedFramesChangeNothingAndAreCounted: a bad MAC, an
// unknown worker, a stale fence, a malformed and an oversized frame leave
// the aggregates alone and count by reason.
func TestReceiver_ForgedFramesChangeNothingAndAreCounted(t *testing.T) {
	leases := &leaseTable{}
	leases.grant("a", "w1", 2)
	leases.grant("b", "w1", 2)
	r, frames := startReceiver(t, Config{UDPAddr: "127.0.0.1:0", Leases: leases})
	conn, err := net.Dial("udp", r.UDPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	frame := func(worker string, key []byte, ups ...Update) []byte {
		b, err := AppendFrame(nil, Header{KeyID: 7, Seq: 1, Worker: worker}, ups, key)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := frame("w1", testKey, Update{Workflow: "a", Fence: 2, Completed: 10})
	badMAC := bytes.Clone(good)
	badMAC[len(badMAC)-1] ^= 1
	sends := []struct {
		name  string
		frame []byte
	}{
		{"bad mac", badMAC},
		{"forged key", frame("w1", []byte("not the real key"), Update{Workflow: "a", Fence: 2, Completed: 99})},
		{"unknown worker", frame("w9", testKey, Update{Workflow: "a", Fence: 2, Completed: 99})},
		{"stale fence", frame("w1", testKey, Update{Workflow: "a", Fence: 1, Completed: 99}, Update{Workflow: "b", Fence: 2, Completed: 5})},
		{"not leased", frame("w1", testKey, Update{Workflow: "c", Fence: 2, Completed: 99})},
		{"malformed", []byte("hello")},
		{"too large", make([]byte, DefaultReceiveFrameBytes+1)},
		{"good", good},
		{"duplicate", good},
	}
	for _, s := range sends {
		if _, err := conn.Write(s.frame); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	waitFrames(t, frames, len(sends))
	if got := r.Drain(); len(got) != 2 || got[0].Completed != 10 || got[1].Workflow != "b" || got[1].Completed != 5 {
		t.Fatalf("aggregates %+v", got)
	}
	for reason, want := range map[string]float64{ReasonBadMAC: 2, ReasonUnknownWorker: 1, ReasonStaleFence: 2, ReasonMalformed: 1, ReasonTooLarge: 1, ReasonQueueFull: 0} {
		if got := counterValue(t, r.m.dropped[reason]); got != want {
			t.Errorf("dropped_total{reason=%q} = %v, want %v", reason, got, want)
		}
	}
	for result, want := range map[string]float64{ResultDropped: 5, ResultFolded: 1, ResultDuplicate: 3} {
		if got := counterValue(t, r.m.frames[result]); got != want {
			t.Errorf("frames_total{result=%q} = %v, want %v", result, got, want)
		}
	}
	// Stats carries the same totals as the metrics.
	st := r.Stats()
	if st.Frames != 4 || st.Dropped != 7 || st.Updates != uint64(counterValue(t, r.m.updates)) || st.Level != LevelNone {
		t.Errorf("stats %+v: want 4 frames received, 7 dropped, updates %v", st, counterValue(t, r.m.updates))
	}
}

// TestReceiver_QueueFillSetsBackpressureAndOverflowIsCounted fills the
// queue of a receiver whose fold goroutine has not started.
func TestReceiver_QueueFillSetsBackpressureAndOverflowIsCounted(t *testing.T) {
	r, err := New(Config{TCPAddr: "127.0.0.1:0", Keys: keyMap{"w1": testKey}, Leases: holdAll(), QueueFrames: 20})
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := NewEncoder(EncoderConfig{Worker: "w1", KeyID: 7, Key: testKey})
	push := func() {
		_ = enc.Encode([]Update{{Workflow: "a", Fence: 1, Completed: enc.Seq() + 1}}, func(f []byte) error {
			fb := r.getBuf()
			fb.n = copy(fb.b, f)
			r.enqueue(fb)
			return nil
		})
	}
	// 20 slots: 13 frames fill 65 %, 14 fill 70 %, 17 fill 85 %, 19 fill
	// 95 %; the 21st does not fit.
	want := map[int]Level{1: LevelNone, 13: LevelNone, 14: LevelThrottle, 16: LevelThrottle, 17: LevelBatch, 18: LevelBatch, 19: LevelReject, 20: LevelReject, 21: LevelReject}
	for i := 1; i <= 21; i++ {
		push()
		if w, ok := want[i]; ok && r.Backpressure() != w {
			t.Fatalf("after %d frames: level %v, want %v (fill %v)", i, r.Backpressure(), w, r.QueueFill())
		}
	}
	if got := counterValue(t, r.m.dropped[ReasonQueueFull]); got != 1 {
		t.Fatalf("queue_full %v, want 1", got)
	}
	if got := r.Drain(); len(got) != 0 { // not started: nothing folded, no deadlock
		t.Fatalf("drain before Start %+v", got)
	}
	frames := make(chan struct{}, 32)
	r.afterFrame = func() { frames <- struct{}{} }
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	waitFrames(t, frames, 20)
	if r.Backpressure() != LevelNone {
		t.Fatalf("level %v after the queue drained", r.Backpressure())
	}
	if p, _ := r.Get("a", "w1"); p.Completed != 20 {
		t.Fatalf("aggregate %+v, want the 20th frame's counters", p)
	}
}

// TestReceiver_TCPBounds: a length prefix over the limit closes the
// connection and is counted, a connection past MaxConns is closed at once,
// an idle connection is closed after TCPIdleTimeout.
func TestReceiver_TCPBounds(t *testing.T) {
	r, frames := startReceiver(t, Config{TCPAddr: "127.0.0.1:0", MaxConns: 1, TCPIdleTimeout: 200 * time.Millisecond})
	addr := r.TCPAddr().String()
	dial := func() net.Conn {
		c, err := net.DialTimeout("tcp", addr, waitTimeout)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(waitTimeout))
		return c
	}
	expectEOF := func(c net.Conn, what string) {
		t.Helper()
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
			t.Fatalf("%s: read %v, want the connection closed", what, err)
		}
	}

	first := dial()
	good, _ := AppendFrame(nil, Header{KeyID: 7, Seq: 1, Worker: "w1"}, []Update{{Workflow: "a", Completed: 1}}, testKey)
	if _, err := first.Write(appendStreamFrame(nil, good)); err != nil {
		t.Fatal(err)
	}
	waitFrames(t, frames, 1) // first is being served

	second := dial()
	expectEOF(second, "connection over MaxConns")
	if got := counterValue(t, r.m.dropped[ReasonConnLimit]); got != 1 {
		t.Fatalf("conn_limit %v, want 1", got)
	}

	if _, err := first.Write([]byte{0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	expectEOF(first, "oversized length prefix")
	if got := counterValue(t, r.m.dropped[ReasonTooLarge]); got != 1 {
		t.Fatalf("too_large %v, want 1", got)
	}

	idle := dial() // the slot is free again once first is closed
	start := time.Now()
	expectEOF(idle, "idle connection")
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("idle connection closed after %v; a refused one?", d)
	}
	if got := counterValue(t, r.m.dropped[ReasonConnLimit]); got != 1 {
		t.Fatalf("conn_limit %v, want still 1", got)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "read"
}

// TestReceiver_CloseLeavesNoGoroutines: after Close every goroutine the
// receiver started (readers, connections, fold) has exited, and the
// aggregates stay readable.
func TestReceiver_CloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, batch := range []int{1, DefaultReadBatch} {
		r, err := New(Config{UDPAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", ReadBatch: batch, Keys: keyMap{"w1": testKey}, Leases: holdAll()})
		if err != nil {
			t.Fatal(err)
		}
		frames := make(chan struct{}, 16)
		r.afterFrame = func() { frames <- struct{}{} }
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
		u := newSender(t, "udp", r.UDPAddr().String())
		tc := newSender(t, "tcp", r.TCPAddr().String())
		_ = u.Set(Update{Workflow: "a", Completed: 1})
		_ = tc.Set(Update{Workflow: "b", Completed: 2})
		for _, s := range []*Sender{u, tc} {
			if _, err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		waitFrames(t, frames, 2)
		// tc's connection stays open: Close must end its reader.
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if got := r.Drain(); len(got) != 2 {
			t.Fatalf("drain after close %+v", got)
		}
		if err := r.Start(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Start after Close: %v", err)
		}
		u.Close()
		tc.Close()
	}
	deadline := time.Now().Add(waitTimeout)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched() // exiting goroutines finish their deferred calls
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after Close:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

func TestConfig_Validate(t *testing.T) {
	ok := Config{UDPAddr: "127.0.0.1:0", Keys: keyMap{}, Leases: holdAll()}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"no address", func(c *Config) { c.UDPAddr = "" }},
		{"no keys", func(c *Config) { c.Keys = nil }},
		{"no leases", func(c *Config) { c.Leases = nil }},
		{"frame too small", func(c *Config) { c.MaxFrameBytes = MinMaxFrameBytes - 1 }},
		{"frame too large", func(c *Config) { c.MaxFrameBytes = LimitMaxFrameBytes + 1 }},
		{"queue too large", func(c *Config) { c.QueueFrames = MaxQueueFrames + 1 }},
		{"batch too large", func(c *Config) { c.ReadBatch = MaxReadBatch + 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			if err := c.Validate(); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate = %v, want ErrInvalid", err)
			}
		})
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}

package progress

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"
)

// benchLoad is a manager's view of many workers: each holds leases on
// flows workflows of one job, and every round raises their counters.
type benchLoad struct {
	keys   keyMap
	leases *leaseTable
	frames [][]byte // rounds × workers frames, in sending order
	ups    []int    // updates per frame
}

func newBenchLoad(b *testing.B, workers, flows, rounds int, hist bool) *benchLoad {
	l := &benchLoad{keys: keyMap{}, leases: &leaseTable{}}
	encs := make([]*Encoder, workers)
	for w := range workers {
		name := fmt.Sprintf("worker-%04d", w)
		l.keys[name] = testKey
		encs[w], _ = NewEncoder(EncoderConfig{Worker: name, KeyID: 7, Key: testKey})
		for f := range flows {
			l.leases.grant(workflowID(w, f), name, 9)
		}
	}
	ups := make([]Update, flows)
	for r := range rounds {
		for w := range workers {
			for f := range ups {
				ups[f] = Update{Workflow: workflowID(w, f), Fence: 9, Completed: uint64(r*1000 + f), Failed: uint64(r)}
				if hist {
					ups[f].Histogram = Histogram{8: uint64(r + 1), 10: uint64(r * 3), 12: uint64(r + 1)}
				}
			}
			err := encs[w].Encode(ups, func(frame []byte) error {
				l.frames = append(l.frames, bytes.Clone(frame))
				l.ups = append(l.ups, 0)
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	dec := NewDecoder(l.keys)
	for i, f := range l.frames {
		_, v, err := dec.Open(f)
		if err != nil {
			b.Fatal(err)
		}
		l.ups[i] = len(v)
	}
	return l
}

// BenchmarkDecodeFold measures the fold goroutine's work per frame (MAC,
// decode, a lease lookup per update, max-merge) in one goroutine, through
// the receiver's own foldFrame.
func BenchmarkDecodeFold(b *testing.B) {
	for _, hist := range []bool{false, true} {
		b.Run(fmt.Sprintf("workers=100/workflows=100/hist=%v", hist), func(b *testing.B) {
			l := newBenchLoad(b, 100, 100, 5, hist)
			r, err := New(Config{TCPAddr: "127.0.0.1:0", Keys: l.keys, Leases: l.leases})
			if err != nil {
				b.Fatal(err)
			}
			fbs := make([]*frameBuf, len(l.frames))
			for i, f := range l.frames {
				fbs[i] = &frameBuf{b: f, n: len(f)}
			}
			b.ReportAllocs()
			updates, i := 0, 0
			for b.Loop() {
				r.foldFrame(fbs[i])
				updates += l.ups[i]
				b.SetBytes(int64(len(l.frames[i])))
				if i++; i == len(fbs) {
					i = 0
				}
			}
			b.ReportMetric(float64(updates)/b.Elapsed().Seconds(), "updates/s")
			b.ReportMetric(float64(updates)/float64(b.N), "updates/frame")
		})
	}
}

// BenchmarkEncode measures a worker packing 1,000 workflows into frames.
func BenchmarkEncode(b *testing.B) {
	enc, _ := NewEncoder(EncoderConfig{Worker: "worker-0001", KeyID: 7, Key: testKey})
	ups := make([]Update, 1000)
	for f := range ups {
		ups[f] = Update{Workflow: workflowID(1, f), Fence: 9, Completed: uint64(1000 + f), Failed: 3}
	}
	b.ReportAllocs()
	frames, size := 0, 0
	for b.Loop() {
		_ = enc.Encode(ups, func(f []byte) error { frames++; size += len(f); return nil })
	}
	b.SetBytes(int64(size / b.N))
	b.ReportMetric(float64(len(ups)*b.N)/b.Elapsed().Seconds(), "updates/s")
	b.ReportMetric(float64(len(ups)*b.N)/float64(frames), "updates/frame")
}

// framesSeen is the number of frames the fold goroutine has handled or
// the readers dropped (frames_total counts both), and the updates folded.
func framesSeen(b *testing.B, r *Receiver) (frames, updates float64) {
	for _, c := range r.m.frames {
		frames += counterValue(b, c)
	}
	return frames, counterValue(b, r.m.updates)
}

// quiesce waits until the receiver has seen sent frames, or has seen no
// new one for 200 ms (the rest were lost), bounded by waitTimeout; it
// returns when the last frame was seen.
func quiesce(b *testing.B, r *Receiver, sent int) time.Time {
	deadline := time.Now().Add(waitTimeout)
	last, lastChange := -1.0, time.Now()
	for time.Now().Before(deadline) {
		seen, _ := framesSeen(b, r)
		if int(seen) >= sent {
			return time.Now()
		}
		if seen != last {
			last, lastChange = seen, time.Now()
		} else if time.Since(lastChange) > 200*time.Millisecond {
			return lastChange
		}
		time.Sleep(time.Millisecond) // pacing a poll, in a benchmark only
	}
	return lastChange
}

// BenchmarkUDPReceive is the loopback end to end: one goroutine sends the
// frames of 100 workers × 100 workflows to a receiver that reads, queues,
// verifies and folds them. An op is one frame (100 updates). rate=max
// sends as fast as one socket can (the receiver sheds what it cannot
// take); rate=1M, 3M and 6M pace the sender at that many updates/s. read=single and read=batch compare one read(2) per datagram
// with recvmmsg(2) of up to 32. Reported: updates/s folded (from the first
// send to the last fold), loss (kernel plus queue_full) and queue_full
// alone, in percent of frames sent.
func BenchmarkUDPReceive(b *testing.B) {
	l := newBenchLoad(b, 100, 100, 10, false)
	for _, rate := range []int{0, 1_000_000, 3_000_000, 6_000_000} {
		for _, batch := range []int{1, DefaultReadBatch} {
			name := fmt.Sprintf("rate=%dM/read=%s", rate/1_000_000, map[bool]string{true: "single", false: "batch"}[batch == 1])
			if rate == 0 {
				name = fmt.Sprintf("rate=max/read=%s", map[bool]string{true: "single", false: "batch"}[batch == 1])
			}
			b.Run(name, func(b *testing.B) { benchUDP(b, l, batch, rate) })
		}
	}
}

func benchUDP(b *testing.B, l *benchLoad, batch, rate int) {
	r, err := New(Config{UDPAddr: "127.0.0.1:0", Keys: l.keys, Leases: l.leases, ReadBatch: batch})
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Start(); err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	conn, err := net.Dial("udp", r.UDPAddr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	framesPerSec := float64(rate) / float64(l.ups[0])
	sent, i := 0, 0
	start := time.Now()
	for b.Loop() {
		if rate > 0 {
			for float64(sent) > time.Since(start).Seconds()*framesPerSec {
				time.Sleep(200 * time.Microsecond) // pacing the load
			}
		}
		if _, err := conn.Write(l.frames[i]); err == nil {
			sent++
		}
		if i++; i == len(l.frames) {
			i = 0
		}
	}
	elapsed := quiesce(b, r, sent).Sub(start)
	seen, updates := framesSeen(b, r)
	queueFull := counterValue(b, r.m.dropped[ReasonQueueFull])
	folded := seen - counterValue(b, r.m.frames[ResultDropped])
	b.ReportMetric(updates/elapsed.Seconds(), "updates/s")
	b.ReportMetric(100*(1-folded/float64(sent)), "loss_%")
	b.ReportMetric(100*queueFull/float64(sent), "queue_full_%")
}

// BenchmarkUDPRead isolates the read mechanism the receiver chooses
// between, side by side in one run so that the machine's noise hits both
// alike: each op queues 1,000 datagrams of 1,200 bytes (sender then
// stopped) and reads them one read(2) each, then queues 1,000 more and
// reads them up to 32 per recvmmsg(2). Only the reads are timed; reported
// are datagrams/s of each and their ratio.
func BenchmarkUDPRead(b *testing.B) {
	const burst = 1000
	frame := make([]byte, DefaultMaxFrameBytes)
	rc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	_ = rc.SetReadBuffer(DefaultSocketBufferBytes)
	sc, err := net.Dial("udp", rc.LocalAddr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer sc.Close()
	br, err := newBatchReader(rc, DefaultReadBatch)
	if err != nil {
		b.Skip(err)
	}
	for i := range DefaultReadBatch {
		br.setBuf(i, make([]byte, DefaultReceiveFrameBytes+1))
	}
	buf := make([]byte, DefaultReceiveFrameBytes+1)
	fill := func() {
		for range burst {
			if _, err := sc.Write(frame); err != nil {
				b.Fatal(err)
			}
		}
		_ = rc.SetReadDeadline(time.Now().Add(waitTimeout))
	}
	b.ReportAllocs()
	var single, batch time.Duration
	for b.Loop() {
		fill()
		start := time.Now()
		for range burst {
			if _, err := rc.Read(buf); err != nil {
				b.Fatal(err)
			}
		}
		single += time.Since(start)

		fill()
		start = time.Now()
		for got := 0; got < burst; {
			n, err := br.read()
			if err != nil {
				b.Fatal(err)
			}
			got += n
		}
		batch += time.Since(start)
	}
	b.ReportMetric(float64(burst*b.N)/single.Seconds(), "single_datagrams/s")
	b.ReportMetric(float64(burst*b.N)/batch.Seconds(), "batch_datagrams/s")
	b.ReportMetric(single.Seconds()/batch.Seconds(), "batch/single")
}

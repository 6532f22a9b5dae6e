package dataplane

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/strata-ledger/strata/cluster/livestats"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/progress"
	"github.com/strata-ledger/strata/wal"
)

// stagePipeline is a Pipeline whose Stage fails its first fail calls
// (fault injection: a NodeWAL under backpressure) and keeps the records
// it took.
type stagePipeline struct {
	Pipeline // Submit and Release are not used by stageOnce
	fail     int
	calls    int
	staged   [][]byte
}

func (p *stagePipeline) Stage(_ context.Context, payload []byte, _ hlc.Timestamp) (wal.LSN, error) {
	p.calls++
	if p.fail > 0 {
		p.fail--
		return 0, errors.New("injected: NodeWAL backpressure")
	}
	p.staged = append(p.staged, append([]byte(nil), payload...))
	return wal.LSN(len(p.staged)), nil
}

type oneKey []byte

func (k oneKey) Key(worker string, keyID uint32) ([]byte, bool) {
	return k, worker == "w1" && keyID == 7
}

type allLeases struct{}

func (allLeases) Holds(string, string, uint64) bool { return true }

// A stage the NodeWAL refuses is tried again at the next tick with what
// it held, although the worker's later frames change nothing: with a long
// commit interval the aggregate would otherwise not reach LOCAL until the
// next commit (the CI failure of TestDataPlane_LocalAggregateSurvivesLeaderKill,
// whose worker repeats one counter). Its fold time is kept, so the
// LOCAL histogram counts the record once, when it is written.
func TestStageOnce_RetriesAFailedStage(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	clock := &foldClock{Leases: allLeases{}}
	rcv, err := progress.New(progress.Config{UDPAddr: "127.0.0.1:0", Keys: oneKey(key), Leases: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := rcv.Start(); err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	pipe := &stagePipeline{fail: 3}
	d := &Manager{cfg: Config{Pipeline: pipe, Clock: func() (hlc.Timestamp, error) { return hlc.Timestamp{}, nil }},
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), rcv: rcv, clock: clock, live: livestats.NewTracker(),
		stager: progress.NewStageEncoder(1), pending: map[aggKey]progress.Progress{}, tracked: map[aggKey]uint64{},
		local: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "local"})}

	s, err := progress.NewSender(progress.SenderConfig{Addr: rcv.UDPAddr().String(), Network: "udp",
		Encoder: progress.EncoderConfig{Worker: "w1", KeyID: 7, Key: key}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Set(progress.Update{Workflow: "wf1", Fence: 3, Completed: 300}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for len(pipe.staged) == 0 && time.Now().Before(deadline) {
		if pipe.calls == 0 { // until the frame is folded (UDP may lose one)
			if _, err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		d.stageOnce(ctx)
	}
	if len(pipe.staged) != 1 || pipe.calls != 4 {
		t.Fatalf("after 3 refused stages: %d records staged in %d calls, want 1 in 4", len(pipe.staged), pipe.calls)
	}
	var got []progress.Progress
	var dec progress.StageDecoder
	if err := dec.Decode(pipe.staged[0], func(p progress.Progress) { got = append(got, p) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Workflow != "wf1" || got[0].Worker != "w1" || got[0].Fence != 3 || got[0].Completed != 300 {
		t.Fatalf("staged %+v, want wf1/w1 fence 3 completed 300", got)
	}
	if c := histogramCount(t, d.local); c != 1 {
		t.Fatalf("LOCAL histogram counted %d records, want 1", c)
	}
	if !d.restage.empty() {
		t.Fatalf("still held after the stage: %+v", d.restage.aggs)
	}
	if _, ok := d.pending[aggKey{"wf1", "w1"}]; !ok {
		t.Fatal("the aggregate is not pending for the next commit")
	}
	d.stageOnce(ctx)
	if pipe.calls != 4 {
		t.Fatalf("a tick with nothing changed staged again (%d calls)", pipe.calls)
	}
}

func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	h.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// restage keeps the maximum per aggregate and the oldest fold, and holds
// nothing once merged.
func TestRestage(t *testing.T) {
	t0 := time.Unix(100, 0)
	var r restage
	if out, first := r.merge([]progress.Progress{{Workflow: "a", Worker: "w", Fence: 1, Completed: 5}}, t0); len(out) != 1 || !first.Equal(t0) {
		t.Fatalf("nothing held: merge gave %v, %v", out, first)
	}
	r.hold([]progress.Progress{{Workflow: "a", Worker: "w", Fence: 1, Completed: 5, Failed: 2}}, t0.Add(time.Second))
	r.hold([]progress.Progress{{Workflow: "a", Worker: "w", Fence: 1, Completed: 4, Failed: 3}}, t0)
	out, first := r.merge([]progress.Progress{{Workflow: "b", Worker: "w", Fence: 2, Completed: 1}}, time.Time{})
	if !first.Equal(t0) || len(out) != 2 {
		t.Fatalf("merge: %v at %v", out, first)
	}
	for _, p := range out {
		if p.Workflow == "a" && (p.Completed != 5 || p.Failed != 3) {
			t.Fatalf("a: %+v, want completed 5 failed 3", p)
		}
	}
	if !r.empty() || !r.first.IsZero() {
		t.Fatal("merge left something held")
	}
}

package progress

import (
	"reflect"
	"testing"
)

// history is a worker's sequence of cumulative updates of some workflows
// under one fence: every counter and bucket non-decreasing.
func history(t *testing.T, frames, workflows int) [][]Update {
	r := seeded(t)
	cur := make([]Update, workflows)
	for i := range cur {
		cur[i] = Update{Workflow: workflowID(1, i), Fence: 5, Histogram: make(Histogram, HistogramBuckets)}
	}
	out := make([][]Update, frames)
	for f := range out {
		frame := make([]Update, 0, workflows)
		for i := range cur {
			u := &cur[i]
			u.Completed += r.Uint64N(100)
			u.Failed += r.Uint64N(3)
			u.Histogram[r.IntN(HistogramBuckets)] += r.Uint64N(10)
			c := *u
			c.Histogram = append(Histogram(nil), u.Histogram...)
			frame = append(frame, c)
		}
		out[f] = frame
	}
	return out
}

// model folds by the definition: per workflow, the max of each counter
// over the delivered updates.
func model(delivered [][]Update) map[string]Update {
	m := map[string]Update{}
	for _, frame := range delivered {
		for _, u := range frame {
			p, ok := m[u.Workflow]
			if !ok {
				p = Update{Workflow: u.Workflow, Fence: u.Fence, Histogram: make(Histogram, HistogramBuckets)}
			}
			p.Completed = max(p.Completed, u.Completed)
			p.Failed = max(p.Failed, u.Failed)
			for i, c := range u.Histogram {
				p.Histogram[i] = max(p.Histogram[i], c)
			}
			m[u.Workflow] = p
		}
	}
	return m
}

func trim(h Histogram) Histogram {
	for len(h) > 0 && h[len(h)-1] == 0 {
		h = h[:len(h)-1]
	}
	if len(h) == 0 {
		return nil
	}
	return h
}

// TestFold_AnyLossDuplicationReorderingFoldsToTheLastFrame is the property
// of cumulative counters: deliver a random subsequence of the frames, with
// random duplicates, in random order; the aggregates equal the max of what
// was delivered, and exactly the last frame's counters whenever the last
// frame was delivered.
func TestFold_AnyLossDuplicationReorderingFoldsToTheLastFrame(t *testing.T) {
	r := seeded(t)
	frames := history(t, 40, 8)
	last := frames[len(frames)-1]
	for trial := range 500 {
		var delivered [][]Update
		lastDelivered := trial%2 == 0 // half the trials lose the last frame too
		for i, f := range frames {
			if i == len(frames)-1 && !lastDelivered {
				continue
			}
			if i != len(frames)-1 && r.IntN(3) == 0 {
				continue // lost
			}
			for range 1 + r.IntN(3) { // duplicated
				delivered = append(delivered, f)
			}
		}
		r.Shuffle(len(delivered), func(i, j int) { delivered[i], delivered[j] = delivered[j], delivered[i] })

		a := NewAggregates()
		for _, f := range delivered {
			for _, u := range f {
				a.Fold("worker-1", u)
			}
		}
		want := model(delivered)
		if lastDelivered {
			for _, u := range last {
				if w := want[u.Workflow]; w.Completed != u.Completed || w.Failed != u.Failed || !reflect.DeepEqual(trim(w.Histogram), trim(u.Histogram)) {
					t.Fatalf("trial %d: model %+v is not the last frame %+v", trial, w, u)
				}
			}
		}
		if a.Len() != len(want) {
			t.Fatalf("trial %d: %d aggregates, want %d", trial, a.Len(), len(want))
		}
		for wf, w := range want {
			got, ok := a.Get(wf, "worker-1")
			wantP := Progress{Workflow: wf, Worker: "worker-1", Fence: w.Fence, Completed: w.Completed, Failed: w.Failed, Histogram: trim(w.Histogram)}
			if !ok || !reflect.DeepEqual(got, wantP) {
				t.Fatalf("trial %d: %s = %+v, want %+v", trial, wf, got, wantP)
			}
		}
	}
}

func TestFold_FenceOrdersSeries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		updates []Update
		want    Progress
	}{
		{"higher fence replaces", []Update{{Workflow: "w", Fence: 1, Completed: 100, Failed: 5}, {Workflow: "w", Fence: 2, Completed: 3}},
			Progress{Workflow: "w", Worker: "k", Fence: 2, Completed: 3}},
		{"lower fence ignored", []Update{{Workflow: "w", Fence: 2, Completed: 3}, {Workflow: "w", Fence: 1, Completed: 100}},
			Progress{Workflow: "w", Worker: "k", Fence: 2, Completed: 3}},
		{"same fence max per counter", []Update{{Workflow: "w", Fence: 2, Completed: 3, Failed: 9}, {Workflow: "w", Fence: 2, Completed: 7, Failed: 1}},
			Progress{Workflow: "w", Worker: "k", Fence: 2, Completed: 7, Failed: 9}},
		{"histogram max per bucket", []Update{{Workflow: "w", Histogram: Histogram{1, 5}}, {Workflow: "w", Histogram: Histogram{3, 2, 0, 1}}},
			Progress{Workflow: "w", Worker: "k", Histogram: Histogram{3, 5, 0, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAggregates()
			for _, u := range tc.updates {
				a.Fold("k", u)
			}
			if got, _ := a.Get("w", "k"); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestDrain_ReturnsOnlyWhatChanged: Drain gives each changed aggregate
// once, sorted; an update that changes nothing does not mark it.
func TestDrain_ReturnsOnlyWhatChanged(t *testing.T) {
	a := NewAggregates()
	a.Fold("w2", Update{Workflow: "b", Fence: 1, Completed: 1})
	a.Fold("w1", Update{Workflow: "b", Fence: 1, Completed: 2})
	a.Fold("w1", Update{Workflow: "a", Fence: 1, Completed: 3})
	a.Fold("w1", Update{Workflow: "a", Fence: 1, Completed: 4})
	got := a.Drain()
	want := []Progress{
		{Workflow: "a", Worker: "w1", Fence: 1, Completed: 4},
		{Workflow: "b", Worker: "w1", Fence: 1, Completed: 2},
		{Workflow: "b", Worker: "w2", Fence: 1, Completed: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("first drain %+v", got)
	}
	if a.Fold("w1", Update{Workflow: "a", Fence: 1, Completed: 4}) || len(a.Drain()) != 0 {
		t.Fatal("a repeated update marked a change")
	}
	a.Fold("w2", Update{Workflow: "b", Fence: 1, Completed: 9})
	if got := a.Drain(); len(got) != 1 || got[0].Completed != 9 {
		t.Fatalf("second drain %+v", got)
	}
}

func TestForget_DropsAggregateAndPendingChange(t *testing.T) {
	a := NewAggregates()
	a.Fold("w1", Update{Workflow: "a", Fence: 1, Completed: 4})
	a.Fold("w1", Update{Workflow: "b", Fence: 1, Completed: 4})
	a.Forget("a", "w1")
	a.Forget("a", "nobody")
	if got := a.Drain(); len(got) != 1 || got[0].Workflow != "b" || a.Len() != 1 {
		t.Fatalf("drain %+v, len %d", got, a.Len())
	}
	if _, ok := a.Get("a", "w1"); ok {
		t.Fatal("forgotten aggregate still there")
	}
	a.Fold("w1", Update{Workflow: "a", Fence: 1, Completed: 1})
	if got, _ := a.Get("a", "w1"); got.Completed != 1 {
		t.Fatalf("after forget %+v", got)
	}
}

func TestLevelForFill(t *testing.T) {
	for _, tc := range []struct {
		fill float64
		want Level
	}{{0, LevelNone}, {0.699, LevelNone}, {0.70, LevelThrottle}, {0.849, LevelThrottle}, {0.85, LevelBatch}, {0.95, LevelReject}, {1, LevelReject}} {
		if got := LevelForFill(tc.fill); got != tc.want {
			t.Errorf("LevelForFill(%v) = %v, want %v", tc.fill, got, tc.want)
		}
	}
}

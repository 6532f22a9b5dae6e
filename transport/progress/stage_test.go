package progress

import (
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func stageDecodeAll(t *testing.T, d *StageDecoder, rec []byte) []Progress {
	t.Helper()
	var out []Progress
	if err := d.Decode(rec, func(p Progress) { out = append(out, p) }); err != nil {
		t.Fatal(err)
	}
	return out
}

// The staged record format is pinned: FORMAT.md, "Staged records".
func TestStage_EncodingIsGolden(t *testing.T) {
	e := NewStageEncoder(7)
	rec, err := e.Append(nil, []Progress{{Worker: "w1", Workflow: "j/use1/a/0", Fence: 2, Completed: 300, Failed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	rec2, err := e.Append(nil, []Progress{{Worker: "w1", Workflow: "j/use1/a/0", Fence: 2, Completed: 301, Failed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rec  []byte
		want string
	}{
		// version 1, epoch 7, 1 new key ("w1", "j/use1/a/0"), 1 entry (key 0, fence 2, 300, 1)
		{rec, "01" + "07" + "01" + "02" + hex.EncodeToString([]byte("w1")) + "0a" + hex.EncodeToString([]byte("j/use1/a/0")) + "01" + "00" + "02" + "ac02" + "01"},
		// the same epoch: the key is only referred to
		{rec2, "01" + "07" + "00" + "01" + "00" + "02" + "ad02" + "01"},
	} {
		if got := hex.EncodeToString(tc.rec); got != tc.want {
			t.Errorf("record %s, want %s", got, tc.want)
		}
	}
}

// Any sequence of records over several epochs decodes to exactly what
// was encoded.
func TestStage_RoundTripAcrossEpochs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	e, d := NewStageEncoder(1<<40), &StageDecoder{}
	for epoch := range 5 {
		if epoch > 0 {
			e.NewEpoch()
		}
		for range 20 {
			var ps []Progress
			for range r.IntN(50) {
				ps = append(ps, Progress{Worker: "w" + string(rune('a'+r.IntN(3))), Workflow: "job/use1/load/" + string(rune('0'+r.IntN(10))),
					Fence: r.Uint64N(5) + 1, Completed: r.Uint64(), Failed: r.Uint64N(1000)})
			}
			rec, err := e.Append(nil, ps)
			if err != nil {
				t.Fatal(err)
			}
			if got := stageDecodeAll(t, d, rec); !slices.EqualFunc(got, ps, func(a, b Progress) bool {
				return a.Worker == b.Worker && a.Workflow == b.Workflow && a.Fence == b.Fence && a.Completed == b.Completed && a.Failed == b.Failed
			}) {
				t.Fatalf("decoded %+v, want %+v", got, ps)
			}
		}
	}
}

func TestStage_DecoderRefuses(t *testing.T) {
	e := NewStageEncoder(3)
	first, _ := e.Append(nil, []Progress{{Worker: "w1", Workflow: "a", Completed: 1}})
	second, _ := e.Append(nil, []Progress{{Worker: "w1", Workflow: "a", Completed: 2}})
	for name, rec := range map[string][]byte{
		"empty":             {},
		"version 2":         append([]byte{2}, first[1:]...),
		"truncated":         first[:len(first)-1],
		"trailing bytes":    append(slices.Clone(first), 0),
		"unknown key":       second, // a fresh decoder never saw the epoch's first record
		"huge key count":    {1, 3, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"huge entry count":  {1, 3, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"empty worker name": {1, 3, 1, 0, 1, 'a', 0},
	} {
		d := &StageDecoder{}
		calls := 0
		err := d.Decode(rec, func(Progress) { calls++ })
		if !errors.Is(err, ErrStage) || calls != 0 {
			t.Errorf("%s: err %v after %d calls", name, err, calls)
		}
	}
	if _, err := NewStageEncoder(0).Append(nil, []Progress{{Worker: "", Workflow: "a"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("an empty worker was encoded: %v", err)
	}
}

func FuzzStageDecode(f *testing.F) {
	e := NewStageEncoder(9)
	first, _ := e.Append(nil, []Progress{{Worker: "w1", Workflow: "a/b", Fence: 1, Completed: 5}})
	second, _ := e.Append(nil, []Progress{{Worker: "w1", Workflow: "a/b", Fence: 1, Completed: 6}, {Worker: "w2", Workflow: "c", Fence: 3}})
	f.Add(first, second)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		d := &StageDecoder{}
		for _, rec := range [][]byte{a, b} {
			_ = d.Decode(rec, func(p Progress) {
				if p.Worker == "" || p.Workflow == "" || len(p.Worker) > MaxWorkerBytes || len(p.Workflow) > MaxWorkflowBytes {
					t.Fatalf("decoded %+v", p)
				}
			})
		}
	})
}

// BenchmarkStageAppend: one staged record of 2,000 changed aggregates
// whose keys the epoch already named (the steady state), against
// encoding their ids every time (no dictionary), side by side.
func BenchmarkStageAppend(b *testing.B) {
	ps := make([]Progress, 2000)
	for i := range ps {
		ps[i] = Progress{Worker: "w-" + string(rune('a'+i%8)), Workflow: "use1-1795620716761-g1-00001/use1/load/" + string(rune('0'+i%10)) + string(rune('a'+i/10%26)) + string(rune('a'+i/260)),
			Fence: 1, Completed: 123456, Failed: 789}
	}
	b.Run("dictionary", func(b *testing.B) {
		e := NewStageEncoder(1)
		buf, _ := e.Append(nil, ps)
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = e.Append(buf[:0], ps)
		}
		b.ReportMetric(float64(len(buf))/float64(len(ps)), "bytes/aggregate")
	})
	b.Run("ids-every-time", func(b *testing.B) {
		e := NewStageEncoder(1)
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			e.NewEpoch()
			buf, _ = e.Append(buf[:0], ps)
		}
		b.ReportMetric(float64(len(buf))/float64(len(ps)), "bytes/aggregate")
	})
}

package bundle

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// TestRunSet_FanInBoundsEveryMerge: with a fan-in of 3, runs of records
// are merged level by level as they are spilled (3 spills make a level-1
// run, 3 of those a level-2 run), then the smallest until at most 3 are
// left; the merge with two in-memory runs gives every record once, in
// order, lines intact; every file is closed at the end.
func TestRunSet_FanInBoundsEveryMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	files := &countedRuns{dir: t.TempDir()}
	rs := &runSet[lineRec, *lineRec]{newFile: files.newFile, fanIn: 3}
	defer rs.close()
	var all []lineRec
	rec := func(i int) lineRec {
		return lineRec{key: fakeKey(r), seq: uint64(i), line: fmt.Appendf(nil, "line %d %s\n", i, oddString(r, r.IntN(40)))}
	}
	for spill := range 23 {
		recs := make([]lineRec, r.IntN(50))
		for i := range recs {
			recs[i] = rec(spill*100 + i)
		}
		all = append(all, slices.Clone(recs)...)
		if err := rs.spill(recs, byLine); err != nil {
			t.Fatal(err)
		}
		if len(rs.files) > 2*3 { // at most fanIn-1 runs of each of two levels
			t.Fatalf("%d runs after %d spills", len(rs.files), spill+1)
		}
	}
	if rs.files[0].level != 2 {
		t.Fatalf("23 spills: the first run is of level %d, want 2", rs.files[0].level)
	}
	var mems [2][]lineRec
	for k := range mems {
		for i := range 30 {
			mems[k] = append(mems[k], rec(10_000*(k+1)+i))
		}
		all = append(all, mems[k]...)
		slices.SortFunc(mems[k], byLine)
	}
	next, err := rs.merge(byLine, mems[0], mems[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.files) > 3 {
		t.Fatalf("%d runs merged at once, fan-in 3", len(rs.files))
	}
	slices.SortFunc(all, byLine)
	for i := 0; ; i++ {
		got, ok, err := next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if i != len(all) {
				t.Fatalf("%d records, want %d", i, len(all))
			}
			break
		}
		if i >= len(all) {
			t.Fatalf("more than the %d records", len(all))
		}
		if w := all[i]; got.key != w.key || got.seq != w.seq || string(got.line) != string(w.line) {
			t.Fatalf("record %d: %+v, want %+v", i, got, w)
		}
	}
	rs.close()
	if files.open_ != 0 || rs.cascades == 0 {
		t.Fatalf("%d files made, %d open, %d merged runs", files.made, files.open_, rs.cascades)
	}
	t.Logf("%d records, %d run files, %d of merged runs", len(all), files.made, rs.cascades)
}

// fakeKey is a random sort key with many ties on the HLC.
func fakeKey(r *rand.Rand) (k fsm.EventKey) {
	k.HLC = hlc.Timestamp{WallMs: r.Int64N(5), Logical: r.Uint32N(2), Node: r.Uint32N(2)}
	k.ID[0], k.ID[15] = byte(r.IntN(256)), byte(r.IntN(256))
	return k
}

// FuzzLineRecRun: reading a run (its own temporary file, but a decoder
// all the same) never panics nor takes a line over MaxNDJSONLineBytes,
// and what putRun wrote reads back whole.
func FuzzLineRecRun(f *testing.F) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	for i := range 3 {
		r := lineRec{key: fsm.EventKey{HLC: hlc.Timestamp{WallMs: int64(i)}}, seq: uint64(i), line: []byte("{}\n")}
		r.putRun(w)
	}
	w.Flush()
	f.Add(buf.Bytes())
	f.Add(buf.Bytes()[:50])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReader(bytes.NewReader(data))
		var r, back lineRec
		for r.getRun(br) == nil {
			if len(r.line) > MaxNDJSONLineBytes {
				t.Fatalf("a line of %d bytes", len(r.line))
			}
			var again bytes.Buffer
			w := bufio.NewWriter(&again)
			r.putRun(w)
			w.Flush()
			if err := back.getRun(bufio.NewReader(&again)); err != nil || back.key != r.key || back.seq != r.seq || !bytes.Equal(back.line, r.line) {
				t.Fatalf("%+v written and read back: %+v, %v", r, back, err)
			}
		}
	})
}

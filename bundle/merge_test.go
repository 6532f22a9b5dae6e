package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

// rechained writes events as a bundle with a chain recomputed over their
// order (the Writer's Rechain mode), created at created.
func rechained(t testing.TB, events []*fsm.StoredEvent, created time.Time, by string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterConfig{Tenant: "acme", CreatedAt: created, CreatedBy: by, Rechain: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, se := range events {
		if err := w.Append(se); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sources(bs ...[]byte) []Source {
	out := make([]Source, len(bs))
	for i, b := range bs {
		out[i] = Source{Name: fmt.Sprintf("in%d.bundle", i), R: bytes.NewReader(b), Size: int64(len(b))}
	}
	return out
}

func merged(t testing.TB, cfg MergeConfig, bs ...[]byte) ([]byte, MergeResult) {
	t.Helper()
	var out bytes.Buffer
	res, err := Merge(&out, sources(bs...), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), res
}

// entriesOf verifies b and returns its events.
func entriesOf(t testing.TB, b []byte) []*fsm.StoredEvent {
	t.Helper()
	var out []*fsm.StoredEvent
	if _, err := Verify(bytes.NewReader(b), VerifyConfig{OnEntry: func(e *Entry) error {
		out = append(out, e.Stored)
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMerge_OrderIndependentProperty: random sets of overlapping bundles
// (random subsets of one ledger's chain, some events repeated at a later
// HLC with the same body), merged in every order tried, give the same
// bytes; the output verifies and holds each event id once, at its
// earliest HLC, in HLC total order, as a naive model says.
func TestMerge_OrderIndependentProperty(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	pool := genChain(t, seed, 1500)
	for round := range 20 {
		k := 2 + rng.IntN(4)
		inputs := make([][]byte, k)
		total := 0
		var all []*fsm.StoredEvent
		for i := range inputs {
			var sub []*fsm.StoredEvent
			for _, se := range pool {
				if rng.IntN(2) == 0 {
					continue
				}
				if rng.IntN(20) == 0 { // the same event, stamped later
					late := *se
					late.HLC.WallMs += 1 + rng.Int64N(5)
					se = &late
				}
				sub = append(sub, se)
			}
			total += len(sub)
			all = append(all, sub...)
			created := testCreated.Add(time.Duration(rng.IntN(100)) * time.Second)
			inputs[i] = rechained(t, sub, created, fmt.Sprintf("node%d", i))
		}
		want := mergeModel(all)
		first, res := merged(t, MergeConfig{}, inputs...)
		if res.Read != uint64(total) || res.Duplicates != uint64(total-len(want)) {
			t.Fatalf("round %d: result %+v, want %d read, %d duplicates", round, res, total, total-len(want))
		}
		got := entriesOf(t, first)
		if len(got) != len(want) {
			t.Fatalf("round %d: %d events, want %d", round, len(got), len(want))
		}
		for i := range got {
			if got[i].ID != want[i].ID || got[i].HLC != want[i].HLC || got[i].Seq != uint64(i+1) {
				t.Fatalf("round %d: event %d is %s at %s seq %d, want %s at %s", round, i, got[i].ID, got[i].HLC, got[i].Seq, want[i].ID, want[i].HLC)
			}
		}
		for range 3 {
			perm := slices.Clone(inputs)
			rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			if again, _ := merged(t, MergeConfig{}, perm...); !bytes.Equal(again, first) {
				t.Fatalf("round %d: a permutation of the inputs merged to other bytes", round)
			}
		}
		if again, _ := merged(t, MergeConfig{}, append(inputs, inputs[0])...); !bytes.Equal(again, first) {
			t.Fatalf("round %d: an input given twice changed the output", round)
		}
	}
}

// mergeModel is the naive merge: per id the entry of least (HLC, event
// encoding), sorted by (HLC, id).
func mergeModel(all []*fsm.StoredEvent) []*fsm.StoredEvent {
	best := map[fsm.EventID]*fsm.StoredEvent{}
	enc := func(se *fsm.StoredEvent) string { b, _ := se.Event.MarshalBinary(); return string(b) }
	for _, se := range all {
		b, ok := best[se.ID]
		if !ok || se.HLC.Less(b.HLC) || (se.HLC == b.HLC && enc(se) < enc(b)) {
			best[se.ID] = se
		}
	}
	out := make([]*fsm.StoredEvent, 0, len(best))
	for _, se := range best {
		out = append(out, se)
	}
	slices.SortFunc(out, func(a, b *fsm.StoredEvent) int { return a.Key().Compare(b.Key()) })
	return out
}

func TestMerge_BodyConflictIsRefusedNamingTheID(t *testing.T) {
	pool := genChain(t, 4, 800)
	var victim int
	for i, se := range pool {
		if _, ok := se.Body.(*fsm.JobProgressReported); ok {
			victim = i
			break
		}
	}
	other := *pool[victim]
	body := *other.Body.(*fsm.JobProgressReported)
	body.Completed++
	other.Body = &body
	a := rechained(t, pool, testCreated, "a")
	b := rechained(t, []*fsm.StoredEvent{&other}, testCreated, "b")
	var out bytes.Buffer
	_, err := Merge(&out, sources(a, b), MergeConfig{})
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrBodyConflict) || ce.EventID != other.ID {
		t.Fatalf("err = %v, want a body conflict on %s", err, other.ID)
	}
	if ce.Inputs != [2]string{"in0.bundle", "in1.bundle"} {
		t.Fatalf("inputs %v", ce.Inputs)
	}
	t.Log(err)
}

func TestMerge_RefusesOtherTenantsAndBrokenInputs(t *testing.T) {
	pool := genChain(t, 5, 500)
	a := rechained(t, pool, testCreated, "a")
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, WriterConfig{Tenant: "globex", CreatedAt: testCreated})
	w.Close()
	if _, err := Merge(&bytes.Buffer{}, sources(a, buf.Bytes()), MergeConfig{}); !errors.Is(err, ErrTenant) {
		t.Fatalf("other tenant: err = %v", err)
	}
	bad := bytes.Clone(a)
	bad[len(bad)/2] ^= 1
	_, err := Merge(&bytes.Buffer{}, sources(a, bad), MergeConfig{})
	var be *BreakError
	if !errors.As(err, &be) {
		t.Fatalf("broken input: err = %v", err)
	}
	t.Log(err)
}

func TestMerge_ManifestDerivesFromTheInputs(t *testing.T) {
	pool := genChain(t, 6, 500)
	late := testCreated.Add(time.Hour)
	a := rechained(t, pool[:len(pool)/2], testCreated, "a")
	b := rechained(t, pool[len(pool)/3:], late, "b")
	out, res := merged(t, MergeConfig{Signer: testKey()}, a, b)
	m := res.Manifest
	if m.CreatedAt != formatTime(late) || m.CreatedBy != DefaultMergeCreatedBy || m.BundleID != deriveID("acme", m.EntriesSHA256) {
		t.Fatalf("manifest %+v", m)
	}
	rep, err := Verify(bytes.NewReader(out), VerifyConfig{PublicKey: testKey().Public().(ed25519PublicKey)})
	if err != nil || !rep.Trusted || m.Count != uint64(len(pool)) {
		t.Fatalf("rep %+v, err %v", rep, err)
	}
}

// TestMerge_ExternalEqualsInMemory: random sets of overlapping bundles
// merged with a run size of a few records (so the merge sorts in many
// runs on disk) give the bytes and counts of the in-memory merge, and the
// same body conflict; the runs are removed afterwards.
func TestMerge_ExternalEqualsInMemory(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	pool := genChain(t, seed, 1200)
	dir := t.TempDir()
	for round := range 8 {
		inputs := make([][]byte, 2+rng.IntN(3))
		for i := range inputs {
			var sub []*fsm.StoredEvent
			for _, se := range pool {
				if rng.IntN(3) == 0 {
					continue
				}
				if rng.IntN(15) == 0 {
					late := *se
					late.HLC.WallMs += 1 + rng.Int64N(5)
					se = &late
				}
				sub = append(sub, se)
			}
			inputs[i] = rechained(t, sub, testCreated, fmt.Sprintf("node%d", i))
		}
		want, wres := merged(t, MergeConfig{}, inputs...)
		if wres.Runs != 0 {
			t.Fatalf("the in-memory merge spilled %d runs", wres.Runs)
		}
		for _, run := range []int{3, 7, 100} {
			got, res := merged(t, MergeConfig{RunEntries: run, NewRunFile: tempRuns(dir)}, inputs...)
			if !bytes.Equal(got, want) || res.Read != wres.Read || res.Duplicates != wres.Duplicates || res.Runs < 2 {
				t.Fatalf("round %d, runs of %d: %+v, in memory %+v; equal bytes %v", round, run, res, wres, bytes.Equal(got, want))
			}
		}
		// A body conflict: the same id, another body, in one more input.
		var progress []*fsm.StoredEvent
		for _, se := range pool {
			if _, ok := se.Body.(*fsm.JobProgressReported); ok {
				progress = append(progress, se)
			}
		}
		orig := progress[rng.IntN(len(progress))]
		victim := *orig
		changed := *victim.Body.(*fsm.JobProgressReported)
		changed.Completed++
		victim.Body = &changed
		withConflict := append(slices.Clone(inputs), rechained(t, []*fsm.StoredEvent{orig}, testCreated, "x"),
			rechained(t, []*fsm.StoredEvent{&victim}, testCreated, "y"))
		_, err1 := Merge(&bytes.Buffer{}, sources(withConflict...), MergeConfig{})
		_, err2 := Merge(&bytes.Buffer{}, sources(withConflict...), MergeConfig{RunEntries: 3, NewRunFile: tempRuns(dir)})
		var c1, c2 *ConflictError
		if !errors.As(err1, &c1) || !errors.As(err2, &c2) || c1.EventID != c2.EventID || c1.EventID != victim.ID {
			t.Fatalf("round %d: conflicts %v and %v, want both on %s", round, err1, err2, victim.ID)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("%d run files left", len(left))
	}
}

// Past RunEntries without a place to spill runs to, a merge is refused.
func TestMerge_ExternalNeedsRunFiles(t *testing.T) {
	pool := genChain(t, 8, 300)
	a := rechained(t, pool, testCreated, "a")
	if _, err := Merge(&bytes.Buffer{}, sources(a), MergeConfig{RunEntries: 2}); !errors.Is(err, ErrLimit) {
		t.Fatalf("err = %v, want ErrLimit", err)
	}
}

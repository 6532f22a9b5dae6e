package bundle

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// midChain writes chain[from:to] as a bundle that starts mid-chain, as
// an HLC-range export does.
func midChain(t testing.TB, chain []*fsm.StoredEvent, from, to int, rng *Range, signer ed25519.PrivateKey) []byte {
	t.Helper()
	var start fsm.ChainHead
	if from > 0 {
		start = fsm.ChainHead{Seq: chain[from-1].Seq, Link: chain[from-1].Link}
	}
	var buf bytes.Buffer
	_, err := WriteChain(&buf, WriterConfig{Tenant: "acme", CreatedAt: testCreated, CreatedBy: "use1-gate1", Signer: signer, Start: start, Range: rng},
		func(fn func(*fsm.StoredEvent) error) error {
			for _, se := range chain[from:to] {
				if err := fn(se); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A bundle that starts mid-chain verifies, taking its first previous
// link as given (the report and the manifest name it), and holds the
// checkpoints of the batches wholly inside it: the same ones the whole
// chain's bundle holds.
func TestVerify_MidChainBundle(t *testing.T) {
	chain := chainOf(t, applyAll(t, oneTenantStream(3*CheckpointEvents+50)), "acme")
	from, to := 700, 2*CheckpointEvents+300 // batches 1..1000 cut, 1001..2000 whole, 2001.. cut
	rng := &Range{From: chain[from].HLC, To: chain[to-1].HLC}
	if rng.To.Less(rng.From) {
		rng.From, rng.To = rng.To, rng.From
	}
	b := midChain(t, chain, from, to, rng, testKey())
	rep, err := Verify(bytes.NewReader(b), VerifyConfig{PublicKey: testKey().Public().(ed25519.PublicKey)})
	if err != nil {
		t.Fatal(err)
	}
	want := fsm.ChainHead{Seq: chain[from-1].Seq, Link: chain[from-1].Link}
	if rep.Start != want || rep.Entries != uint64(to-from) || rep.Checkpoints != 1 || rep.CheckpointsSigned != 1 ||
		rep.Manifest.Start != (Head{Seq: want.Seq, Link: want.Link}) || rep.Manifest.Range == nil {
		t.Fatalf("report %+v", rep)
	}
	whole := writeBundle(t, chain, testKey())
	if !bytes.Contains(whole, checkpointFrames(t, b)[0]) {
		t.Fatal("the mid-chain bundle's checkpoint is not the whole chain's")
	}

	// The manifest's start must be the first entry's previous link.
	var be *BreakError
	if err := midChainWith(t, chain, from, to, func(c *WriterConfig) { c.Start.Seq-- }); !errors.As(err, &be) || be.Field != "seq" {
		t.Fatalf("a writer took a start that does not continue into the first event: %v", err)
	}
	if err := midChainWith(t, chain, from, to, func(c *WriterConfig) { c.Start.Link[0] ^= 1 }); !errors.As(err, &be) || be.Field != "link" {
		t.Fatalf("a writer took a start link that is not the first event's previous: %v", err)
	}
	// A bundle whose first entry was removed reads as one that starts
	// mid-chain: the checkpoint of its first batch is then out of place,
	// and without one the manifest's start (genesis) names it.
	for _, tc := range []struct {
		n           int
		part, field string
	}{{len(chain), PartCheckpoint, "unexpected"}, {50, PartManifest, "start"}} {
		g := writeBundle(t, chain[:tc.n], nil)
		fs := frames(t, g)
		cut := append(bytes.Clone(g[:fs[0].off]), g[fs[1].off:]...)
		if _, err := Verify(bytes.NewReader(cut), VerifyConfig{}); !errors.As(err, &be) || be.Part != tc.part || be.Field != tc.field {
			t.Fatalf("a bundle of %d without its first entry: %v", tc.n, err)
		}
	}
	// An empty range export: no entries, start as given.
	empty := midChain(t, chain, from, from, &Range{From: rng.To, To: rng.To}, nil)
	if rep, err := Verify(bytes.NewReader(empty), VerifyConfig{}); err != nil || rep.Entries != 0 {
		t.Fatalf("empty: %+v %v", rep, err)
	}
	// The range must hold the first and the last entry.
	outside := midChain(t, chain, from, to, &Range{From: rng.From, To: rng.From}, nil)
	if _, err := Verify(bytes.NewReader(outside), VerifyConfig{}); !errors.As(err, &be) || be.Field != "range" {
		t.Fatalf("a range that does not hold the entries: %v", err)
	}
}

// midChainWith writes with an edited config and returns the error.
func midChainWith(t testing.TB, chain []*fsm.StoredEvent, from, to int, edit func(*WriterConfig)) error {
	cfg := WriterConfig{Tenant: "acme", CreatedAt: testCreated, CreatedBy: "x",
		Start: fsm.ChainHead{Seq: chain[from-1].Seq, Link: chain[from-1].Link}}
	edit(&cfg)
	var buf bytes.Buffer
	_, err := WriteChain(&buf, cfg, func(fn func(*fsm.StoredEvent) error) error {
		for _, se := range chain[from:to] {
			if err := fn(se); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

func checkpointFrames(t testing.TB, b []byte) [][]byte {
	var out [][]byte
	for _, f := range frames(t.(*testing.T), b) {
		if f.kind == kindCheckpoint {
			out = append(out, b[f.off:f.off+f.size])
		}
	}
	return out
}

// With a trusted key, a checkpoint must be signed by it.
func TestVerify_CheckpointSignedByAnotherKey(t *testing.T) {
	chain := chainOf(t, applyAll(t, oneTenantStream(CheckpointEvents+10)), "acme")
	b := writeBundle(t, chain, testKey())
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	var be *BreakError
	if _, err := Verify(bytes.NewReader(b), VerifyConfig{PublicKey: other.Public().(ed25519.PublicKey)}); !errors.As(err, &be) ||
		be.Part != PartCheckpoint || be.Field != "signature" {
		t.Fatalf("checkpoint against another trusted key: %v", err)
	}
	unsigned := writeBundle(t, chain, nil)
	rep, err := Verify(bytes.NewReader(unsigned), VerifyConfig{})
	if err != nil || rep.Checkpoints != 1 || rep.CheckpointsSigned != 0 {
		t.Fatalf("unsigned: %+v %v", rep, err)
	}
}

// NDJSON of a mid-chain bundle, whole or filtered by an HLC range,
// verifies; a filtered line outside the range does not.
func TestNDJSON_RangeAndMidChain(t *testing.T) {
	chain := chainOf(t, applyAll(t, oneTenantStream(2500)), "acme")
	from, to := 400, 1900
	b := midChain(t, chain, from, to, nil, nil)
	src := Source{Name: "mid", R: bytes.NewReader(b), Size: int64(len(b))}
	var nd bytes.Buffer
	if _, err := WriteNDJSON(&nd, src, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyNDJSON(bytes.NewReader(nd.Bytes()))
	if err != nil || rep.Lines != uint64(to-from) || rep.Head.Seq != chain[to-1].Seq {
		t.Fatalf("mid-chain ndjson: %+v %v", rep, err)
	}
	rng := &Range{From: chain[900].HLC, To: chain[1200].HLC}
	if rng.To.Less(rng.From) {
		rng.From, rng.To = rng.To, rng.From
	}
	nd.Reset()
	m, err := WriteNDJSONRange(&nd, src, nil, rng)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, se := range chain[from:to] {
		if rng.Contains(se.HLC) {
			n++
		}
	}
	rep, err = VerifyNDJSON(bytes.NewReader(nd.Bytes()))
	if err != nil || rep.Lines != uint64(n) || m.Count != uint64(n) || m.Range == nil {
		t.Fatalf("ranged ndjson: %d lines, want %d: %+v %v", rep.Lines, n, rep, err)
	}
	// The same lines under a narrower range do not verify.
	narrow := bytes.Replace(nd.Bytes(), []byte(`"to_hlc":"`+rng.To.String()), []byte(`"to_hlc":"`+rng.From.String()), 1)
	var be *BreakError
	if _, err := VerifyNDJSON(bytes.NewReader(narrow)); !errors.As(err, &be) {
		t.Fatalf("lines outside the range: %v", err)
	}
}

// A merge of inputs whose union is more than a batch holds the
// checkpoints of the merged chain, recomputed and signed with the
// merge's key; the inputs' own checkpoints are not carried over.
func TestMerge_RecomputesCheckpoints(t *testing.T) {
	chain := chainOf(t, applyAll(t, oneTenantStream(2*CheckpointEvents+300)), "acme")
	a := writeBundle(t, chain[:1500], testKey())
	b := rechained(t, chain[1000:], testCreated, "other")
	out, res := merged(t, MergeConfig{Signer: testKey()}, a, b)
	rep, err := Verify(bytes.NewReader(out), VerifyConfig{PublicKey: testKey().Public().(ed25519.PublicKey)})
	if err != nil || rep.Checkpoints != uint64(len(chain)/CheckpointEvents) || rep.CheckpointsSigned != rep.Checkpoints || res.Duplicates != 500 {
		t.Fatalf("merged: %+v %+v %v", rep, res, err)
	}
}

func TestParseRange(t *testing.T) {
	max32 := ^uint32(0)
	for _, tc := range []struct {
		from, to string
		want     *Range
		ok       bool
	}{
		{"", "", nil, true},
		{"1700000000000:0:1", "1700000000005:2:3", &Range{From: hlcTS(1700000000000, 0, 1), To: hlcTS(1700000000005, 2, 3)}, true},
		{"100", "100", &Range{From: hlcTS(100, 0, 0), To: hlcTS(100, max32, max32)}, true},
		{"5", "4", nil, false},
		{"x", "", nil, false},
		{"", "1:2", nil, false},
		{"-1", "", nil, false},
		{"01:0:0", "", nil, false},
	} {
		got, err := ParseRange(tc.from, tc.to)
		if (err == nil) != tc.ok || (tc.ok && tc.want != nil && *got != *tc.want) || (tc.ok && tc.want == nil && got != nil) {
			t.Errorf("ParseRange(%q, %q) = %+v, %v", tc.from, tc.to, got, err)
		}
	}
	if r, _ := ParseRange("7", ""); r.From != hlcTS(7, 0, 0) || !r.Contains(hlcTS(1<<62, 0, 0)) {
		t.Errorf("open end: %+v", r)
	}
}

// FuzzParseRange: ParseRange never panics; a range it accepts is
// ordered and contains both its ends.
func FuzzParseRange(f *testing.F) {
	f.Add("1700000000000:0:1", "1700000000005")
	f.Add("", "9")
	f.Fuzz(func(t *testing.T, from, to string) {
		r, err := ParseRange(from, to)
		if err != nil || r == nil {
			return
		}
		if r.To.Less(r.From) || !r.Contains(r.From) || !r.Contains(r.To) {
			t.Fatalf("accepted %+v", r)
		}
	})
}

func hlcTS(w int64, l, n uint32) hlc.Timestamp { return hlc.Timestamp{WallMs: w, Logical: l, Node: n} }

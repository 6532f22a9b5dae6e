package bundle

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/hlc"
)

// oddPieces make strings of every kind json.Marshal treats apart: HTML
// characters it escapes, quotes and backslashes, control characters,
// DEL, multi-byte UTF-8, U+2028 and U+2029, invalid UTF-8, U+FFFD.
var oddPieces = []string{"a", "Z", "9", " ", "-", "/", "'", "<", ">", "&", `"`, `\`, "\n", "\t", "\r", "\b", "\f", "\x00",
	"\x01", "\x1f", "\x7f", "é", "日本", "\u2028", "\u2029", "\xff", "\xc3", "\ufffd", "😀"}

func oddString(r *rand.Rand, pieces int) string {
	var b strings.Builder
	for range r.IntN(pieces + 1) {
		b.WriteString(oddPieces[r.IntN(len(oddPieces))])
	}
	return b.String()
}

// tiedEvents is n events of tenant "acme" whose HLCs are drawn from a
// few wall clocks, logicals and nodes, so many are equal and ordered by
// event id: fsmtest.Gen's events (every type) and, every fourth, a
// cancellation whose strings, body and envelope alike, are oddString's.
func tiedEvents(seed uint64, n int) []*fsm.StoredEvent {
	r := rand.New(rand.NewPCG(seed, 15))
	g := fsmtest.NewGen(seed)
	out := make([]*fsm.StoredEvent, n)
	for i := range out {
		e := g.Next()
		if i%4 == 0 {
			e = fsm.Event{Type: fsm.TypeJobCancellationRequested, JobID: oddString(r, 6), Region: oddString(r, 3), Node: oddString(r, 3),
				Fence: r.Uint64N(1 << 40), Body: &fsm.JobCancellationRequested{Reason: oddString(r, 20), Requestor: oddString(r, 8)}}
		}
		e.Tenant = "acme"
		for k := range e.ID {
			e.ID[k] = byte(r.Uint32())
		}
		e.HLC = hlc.Timestamp{WallMs: 1_700_000_000_000 + r.Int64N(4), Logical: r.Uint32N(3), Node: r.Uint32N(2)}
		out[i] = &fsm.StoredEvent{Event: e}
	}
	return out
}

func srcOf(b []byte) Source {
	return Source{Name: "in.bundle", R: bytes.NewReader(b), Size: int64(len(b))}
}

// countedRuns makes run files in t's temporary directory and counts the
// ones made and the ones still open.
type countedRuns struct {
	mu          sync.Mutex
	made, open_ int
	dir         string
}

func (c *countedRuns) newFile() (RunFile, error) {
	f, err := tempRuns(c.dir)()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.made++
	c.open_++
	return &countedFile{RunFile: f, c: c}, nil
}

type countedFile struct {
	RunFile
	c      *countedRuns
	closed bool
}

func (f *countedFile) Close() error {
	f.c.mu.Lock()
	if !f.closed {
		f.closed = true
		f.c.open_--
	}
	f.c.mu.Unlock()
	return f.RunFile.Close()
}

// TestNDJSON_EqualsLegacy: the streaming writer's bytes and manifest are
// the legacy writer's (ndjson_legacy_test.go) for chains of ledger
// events and of events with tied HLCs and odd strings, whole and in HLC
// ranges, from genesis and mid-chain, signed, sorted in memory and in
// runs on disk (some merged into bigger runs first), and every run file
// is closed at the end.
func TestNDJSON_EqualsLegacy(t *testing.T) {
	ledger := chainOf(t, applyAll(t, oneTenantStream(3300)), "acme") // late events: HLCs not in seq order
	gen := genChain(t, 8, 3000)                                      // every event type
	tied := tiedEvents(3, 4000)
	type input struct {
		name   string
		bundle []byte
		rng    *Range
		key    bool
		// lossy: invalid UTF-8 in its strings becomes U+FFFD in JSON, so
		// its lines do not verify; their bytes must still be equal.
		lossy bool
	}
	n := len(ledger)
	mid := &Range{From: ledger[n/6].HLC, To: ledger[n*2/3].HLC}
	inputs := []input{
		{name: "ledger", bundle: writeBundle(t, ledger, nil)},
		{name: "ledger signed", bundle: writeBundle(t, ledger, testKey()), key: true},
		{name: "ledger range", bundle: writeBundle(t, ledger, nil), rng: mid},
		{name: "ledger mid-chain", bundle: midChain(t, ledger, n/8, n*3/4, nil, nil)},
		{name: "ledger mid-chain range", bundle: midChain(t, ledger, n/8, n*3/4, nil, nil), rng: mid},
		{name: "ledger empty range", bundle: writeBundle(t, ledger, nil), rng: &Range{To: hlc.Timestamp{WallMs: 1}}},
		{name: "gen", bundle: writeBundle(t, gen, nil)},
		{name: "tied", bundle: rechained(t, tied, testCreated, "x"), lossy: true},
		{name: "tied range", bundle: rechained(t, tied, testCreated, "x"), lossy: true,
			rng: &Range{From: hlc.Timestamp{WallMs: 1_700_000_000_001, Logical: 1}, To: hlc.Timestamp{WallMs: 1_700_000_000_002, Logical: 2, Node: 0}}},
	}
	for _, in := range inputs {
		var pub ed25519.PublicKey
		if in.key {
			pub = testKey().Public().(ed25519.PublicKey)
		}
		var want bytes.Buffer
		wm, err := writeNDJSONLegacy(&want, srcOf(in.bundle), pub, in.rng)
		if err != nil {
			t.Fatalf("%s: legacy: %v", in.name, err)
		}
		if rep, err := VerifyNDJSON(bytes.NewReader(want.Bytes())); err != nil && !in.lossy {
			t.Fatalf("%s: the legacy NDJSON does not verify: %v (%+v)", in.name, err, rep)
		}
		for _, run := range []int{0, 64 << 10, 6 << 10} {
			t.Run(fmt.Sprintf("%s/run=%d", in.name, run), func(t *testing.T) {
				runs := &countedRuns{dir: t.TempDir()}
				var got bytes.Buffer
				m, err := WriteNDJSONWith(&got, srcOf(in.bundle), NDJSONConfig{PublicKey: pub, Range: in.rng, RunBytes: run, NewRunFile: runs.newFile})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) || !reflect.DeepEqual(m, wm) {
					t.Fatalf("%d bytes, legacy %d; first difference at %d; manifest %+v, legacy %+v",
						got.Len(), want.Len(), firstDiff(got.Bytes(), want.Bytes()), m, wm)
				}
				if runs.open_ != 0 || (run > 0 && run < 64<<10 && m.Count > 100 && runs.made < 2) {
					t.Fatalf("%d run files made, %d left open", runs.made, runs.open_)
				}
				t.Logf("%d lines, %d bytes, %d run files", m.Count, got.Len(), runs.made)
			})
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestNDJSON_ErrorsCloseEveryRunAndWriteNothing: a bundle broken after
// runs were spilled (its manifest) is refused, nothing reaches dst, and
// every run file is closed; so is a dst that fails mid-stream, a run
// file that cannot be made, more lines than RunBytes without NewRunFile,
// and an inverted range.
func TestNDJSON_ErrorsCloseEveryRunAndWriteNothing(t *testing.T) {
	chain := genChain(t, 4, 2000)
	b := writeBundle(t, chain, testKey())
	broken := bytes.Clone(b)
	broken[len(broken)-200] ^= 1 // in the manifest or the seal
	cfg := func(runs *countedRuns) NDJSONConfig {
		return NDJSONConfig{RunBytes: 8 << 10, NewRunFile: runs.newFile}
	}

	runs := &countedRuns{dir: t.TempDir()}
	var out bytes.Buffer
	_, err := WriteNDJSONWith(&out, srcOf(broken), cfg(runs))
	if !errors.Is(err, ErrBroken) || out.Len() != 0 || runs.made < 2 || runs.open_ != 0 {
		t.Fatalf("broken bundle: err %v, %d bytes out, %d runs made, %d open", err, out.Len(), runs.made, runs.open_)
	}

	runs = &countedRuns{dir: t.TempDir()}
	c := cfg(runs)
	c.PublicKey = make([]byte, 32) // not the signer
	if _, err := WriteNDJSONWith(&out, srcOf(b), c); !errors.Is(err, ErrBroken) || out.Len() != 0 || runs.open_ != 0 {
		t.Fatalf("wrong key: err %v, %d bytes out, %d open", err, out.Len(), runs.open_)
	}

	runs = &countedRuns{dir: t.TempDir()}
	failing := &failAfter{n: 100 << 10}
	if _, err := WriteNDJSONWith(failing, srcOf(b), cfg(runs)); !errors.Is(err, errFull) || runs.made < 2 || runs.open_ != 0 {
		t.Fatalf("failing dst: err %v, %d runs made, %d open", err, runs.made, runs.open_)
	}

	c = cfg(&countedRuns{})
	c.NewRunFile = func() (RunFile, error) { return nil, errors.New("disk full") }
	if _, err := WriteNDJSONWith(io.Discard, srcOf(b), c); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("no run files: err %v", err)
	}

	c = NDJSONConfig{RunBytes: 8 << 10} // no NewRunFile
	if _, err := WriteNDJSONWith(&out, srcOf(b), c); !errors.Is(err, ErrLimit) || out.Len() != 0 {
		t.Fatalf("no run files past RunBytes: err %v, %d bytes out", err, out.Len())
	}
	c.RunBytes = 1 << 30
	if _, err := WriteNDJSONWith(&out, srcOf(b), c); err != nil || out.Len() == 0 {
		t.Fatalf("in memory: err %v, %d bytes out", err, out.Len())
	}
	out.Reset()

	bad := &Range{From: hlc.Timestamp{WallMs: 2}, To: hlc.Timestamp{WallMs: 1}}
	if _, err := WriteNDJSONRange(&out, srcOf(b), nil, bad); err == nil || out.Len() != 0 {
		t.Fatalf("inverted range: err %v, %d bytes out", err, out.Len())
	}
}

var errFull = errors.New("dst is full")

// failAfter takes n bytes, then fails.
type failAfter struct{ n int }

func (f *failAfter) Write(b []byte) (int, error) {
	if len(b) > f.n {
		return 0, errFull
	}
	f.n -= len(b)
	return len(b), nil
}

package bundle

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/internal/golden"
)

// goldenBundle is FORMAT.md's example: one cancellation of tenant acme,
// signed with testKey.
func goldenBundle(t testing.TB) []byte {
	t.Helper()
	e := fsmtest.NewEvent(fsmtest.ID(1), "use1-1700000000000-gate1-00001", "acme", "use1", "gate1",
		fsmtest.TS(1_700_000_000_000, 0, 1), 2, &fsm.JobCancellationRequested{Reason: "stop", Requestor: "alice"})
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterConfig{Tenant: "acme", CreatedAt: testCreated, CreatedBy: "use1-gate1", Rechain: true, Signer: testKey()})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(&fsm.StoredEvent{Event: e}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// goldenBatch is FORMAT.md's checkpoint example: CheckpointEvents
// cancellations (ids 1.., HLC wall 1700000000000+i) of tenant acme,
// signed with testKey, so the bundle holds one checkpoint frame.
func goldenBatch(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterConfig{Tenant: "acme", CreatedAt: testCreated, CreatedBy: "use1-gate1", Rechain: true, Signer: testKey()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range CheckpointEvents {
		e := fsmtest.NewEvent(fsmtest.ID(uint64(i+1)), "use1-1700000000000-gate1-00001", "acme", "use1", "gate1",
			fsmtest.TS(1_700_000_000_000+int64(i), 0, 1), 2, &fsm.JobCancellationRequested{Reason: "stop", Requestor: "alice"})
		if err := w.Append(&fsm.StoredEvent{Event: e}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestGolden_CheckpointFrame: FORMAT.md's checkpoint example is the
// frame the Writer writes after the entry that completes a batch.
func TestGolden_CheckpointFrame(t *testing.T) {
	b := goldenBatch(t)
	fs := frames(t, b)
	if len(fs) != CheckpointEvents+3 || fs[CheckpointEvents].kind != kindCheckpoint {
		t.Fatalf("%d frames", len(fs))
	}
	checkJSONFrame(t, b, fs[CheckpointEvents], "checkpoint")
	rep, err := Verify(bytes.NewReader(b), VerifyConfig{PublicKey: testKey().Public().(ed25519PublicKey)})
	if err != nil || rep.Checkpoints != 1 || rep.CheckpointsSigned != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
}

// TestGolden_Version1StillVerifies: bundles written before version 2
// (no checkpoints; testdata, written by the version 1 Writer) verify.
func TestGolden_Version1StillVerifies(t *testing.T) {
	for _, name := range []string{"testdata/v1-golden.bundle", "testdata/v1-chain.bundle"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Verify(bytes.NewReader(b), VerifyConfig{PublicKey: testKey().Public().(ed25519PublicKey)})
		if err != nil || rep.Version != 1 || rep.Manifest.Version != 1 || rep.Entries == 0 || !rep.Trusted {
			t.Fatalf("%s: %+v %v", name, rep, err)
		}
		// A version 1 bundle may hold no checkpoint frame.
		fs := frames(t, b)
		m := fs[len(fs)-2]
		withCP := append(append(bytes.Clone(b[:m.off]), appendFrame(nil, kindCheckpoint, []byte("{}"))...), b[m.off:]...)
		var be *BreakError
		if _, err := Verify(bytes.NewReader(withCP), VerifyConfig{}); !errors.As(err, &be) || be.Field != "frame" {
			t.Fatalf("%s with a checkpoint frame: %v", name, err)
		}
	}
}

// TestGolden_FormatDocumentMatchesTheCode: FORMAT.md's example bytes are
// what the Writer writes, and they verify.
func TestGolden_FormatDocumentMatchesTheCode(t *testing.T) {
	b := goldenBundle(t)
	fs := frames(t, b)
	if len(fs) != 3 {
		t.Fatalf("%d frames", len(fs))
	}
	m, s := fs[1], fs[2]
	head := b[:m.off]
	if want := golden.Bytes(t, "FORMAT.md", "entries"); !bytes.Equal(head, want) {
		t.Errorf("header and entry:\n% x\nwant\n% x", head, want)
	}
	checkJSONFrame(t, b, m, "manifest")
	checkJSONFrame(t, b, s, "seal")
	if _, err := Verify(bytes.NewReader(b), VerifyConfig{PublicKey: testKey().Public().(ed25519PublicKey)}); err != nil {
		t.Fatal(err)
	}
	var nd bytes.Buffer
	if _, err := WriteNDJSON(&nd, Source{Name: "golden", R: bytes.NewReader(b), Size: int64(len(b))}, nil); err != nil {
		t.Fatal(err)
	}
	if want := golden.Block(t, "FORMAT.md", "ndjson", "json"); nd.String() != want {
		t.Errorf("ndjson:\n%s\nwant\n%s", nd.String(), want)
	}
}

func checkJSONFrame(t *testing.T, b []byte, s span, name string) {
	t.Helper()
	hdr := b[s.off : s.off+frameHeaderBytes]
	crc := b[s.off+s.size-frameTrailerBytes : s.off+s.size]
	payload := string(b[s.off+frameHeaderBytes : s.off+s.size-frameTrailerBytes])
	if want := strings.TrimSpace(golden.Block(t, "FORMAT.md", name, "json")); payload != want {
		t.Errorf("%s:\n%s\nwant\n%s", name, payload, want)
	}
	if want := golden.Bytes(t, "FORMAT.md", name+"-frame"); !bytes.Equal(append(bytes.Clone(hdr), crc...), want) {
		t.Errorf("%s frame header and CRC: % x, want % x", name, append(bytes.Clone(hdr), crc...), want)
	}
}

// TestGolden_Dump prints the example (run with -v) for updating FORMAT.md.
func TestGolden_Dump(t *testing.T) {
	if !testing.Verbose() {
		t.Skip()
	}
	b := goldenBundle(t)
	fs := frames(t, b)
	t.Logf("\n% x", b[:fs[1].off])
	for _, s := range fs[1:] {
		t.Logf("\n% x | % x\n%s", b[s.off:s.off+5], b[s.off+s.size-4:s.off+s.size], b[s.off+5:s.off+s.size-4])
	}
	var nd bytes.Buffer
	WriteNDJSON(&nd, Source{Name: "golden", R: bytes.NewReader(b), Size: int64(len(b))}, nil)
	t.Logf("\n%s", nd.String())
	b = goldenBatch(t)
	s := frames(t, b)[CheckpointEvents]
	t.Logf("checkpoint\n% x | % x\n%s", b[s.off:s.off+5], b[s.off+s.size-4:s.off+s.size], b[s.off+5:s.off+s.size-4])
}

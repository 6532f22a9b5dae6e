package bundle

import (
	"bytes"
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
}

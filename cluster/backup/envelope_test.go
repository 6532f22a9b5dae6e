package backup

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// The envelope's bytes are fixed: a change of layout must be a new
// version, and files written before it must still read.
func TestEnvelope_Golden(t *testing.T) {
	b, err := Envelope{Group: "use1", Index: 0x0102030405060708, Term: 9}.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	const want = "5354525447534e50010004757365310807060504030201" + "0900000000000000" + "118350e7" // CRC-32C, checked by hand
	if got := hexOf(b); got != want {
		t.Fatalf("envelope bytes\n got %s\nwant %s", got, want)
	}
	e, err := DecodeEnvelope(b)
	if err != nil || e != (Envelope{Group: "use1", Index: 0x0102030405060708, Term: 9}) {
		t.Fatalf("decode: %+v %v", e, err)
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	var sb strings.Builder
	for _, c := range b {
		sb.WriteByte(digits[c>>4])
		sb.WriteByte(digits[c&15])
	}
	return sb.String()
}

// Every flipped byte, truncation or bad name is refused, naming the
// envelope.
func TestEnvelope_RefusesDamage(t *testing.T) {
	b, _ := Envelope{Group: "global", Index: 3, Term: 2}.AppendBinary(nil)
	for i := range b {
		d := bytes.Clone(b)
		d[i] ^= 0x20
		if _, err := DecodeEnvelope(d); !errors.Is(err, ErrEnvelope) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	for n := range len(b) {
		if _, err := DecodeEnvelope(b[:n]); !errors.Is(err, ErrEnvelope) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	for _, name := range []string{"", strings.Repeat("a", MaxGroupName+1), "a b", "a/b", "é"} {
		if _, err := (Envelope{Group: name}).AppendBinary(nil); !errors.Is(err, ErrEnvelope) {
			t.Fatalf("group %q: %v", name, err)
		}
	}
}

// WriteEnveloped puts the ledger header's index in the envelope, and
// Inspect reads group, index and term back; a bare ledger snapshot (v1,
// no envelope) still inspects, with no group; an envelope whose index is
// not its snapshot's is refused.
func TestInspect_EnvelopedAndBare(t *testing.T) {
	led := newLedger(t)
	if _, err := led.Apply(4, fsmtest.JobsCreated(0, 3, "acme", "use1")); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var env, bare bytes.Buffer
	if err := WriteEnveloped(&env, "use1", 11, led.Snapshot); err != nil {
		t.Fatal(err)
	}
	if err := led.Snapshot(&bare); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(env.Bytes(), bare.Bytes()) {
		t.Fatal("the enveloped snapshot does not end with the ledger snapshot")
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	want, _, _ := led.Digest()
	info, err := Inspect(write("env.snap", env.Bytes()))
	if err != nil || info.Group != "use1" || info.Term != 11 || info.Index != 4 || info.Jobs != 3 || info.Tenants != 1 ||
		info.Digest != want || info.Offset != int64(env.Len()-bare.Len()) {
		t.Fatalf("enveloped: %+v %v", info, err)
	}
	info, err = Inspect(write("bare.snap", bare.Bytes()))
	if err != nil || info.Group != "" || info.Offset != 0 || info.Index != 4 || info.Digest != want {
		t.Fatalf("bare: %+v %v", info, err)
	}
	lying, _ := Envelope{Group: "use1", Index: 5, Term: 11}.AppendBinary(nil)
	if _, err := Inspect(write("lying.snap", append(lying, bare.Bytes()...))); !errors.Is(err, ErrEnvelope) {
		t.Fatalf("an envelope naming another index: %v", err)
	}
	if _, err := Inspect(write("junk.snap", []byte("not a snapshot at all"))); err == nil {
		t.Fatal("junk inspected")
	}
	if err := WriteEnveloped(io.Discard, "use1", 1, func(w io.Writer) error { _, err := w.Write([]byte("STRT")); return err }); err == nil {
		t.Fatal("a snapshot shorter than its header was enveloped")
	}
}

// FuzzDecodeEnvelope: any input either decodes to an envelope that
// encodes back to the same bytes, or is refused with ErrEnvelope.
func FuzzDecodeEnvelope(f *testing.F) {
	b, _ := Envelope{Group: "global", Index: 1, Term: 1}.AppendBinary(nil)
	f.Add(b)
	f.Add([]byte(fsm.SnapshotMagic))
	f.Add([]byte(EnvelopeMagic + "\x01\x00\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := DecodeEnvelope(in)
		if err != nil {
			if !errors.Is(err, ErrEnvelope) {
				t.Fatalf("error without ErrEnvelope: %v", err)
			}
			return
		}
		out, err := e.AppendBinary(nil)
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("%+v re-encodes to %x (%v), read from %x", e, out, err, in)
		}
		if _, n, ok, err := ReadEnvelope(bytes.NewReader(in)); !ok || err != nil || n != int64(len(in)) {
			t.Fatalf("ReadEnvelope: %d %v %v", n, ok, err)
		}
	})
}

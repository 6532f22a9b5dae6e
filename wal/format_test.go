package wal

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/internal/golden"
)

// goldenBytes returns the bytes of the golden block marked name in
// FORMAT.md (internal/golden).
func goldenBytes(t *testing.T, name string) []byte { return golden.Bytes(t, "FORMAT.md", name) }

func TestFormat_GoldenRecordMatchesFORMAT(t *testing.T) {
	rec := Record{Type: 3, HLC: hlc.Timestamp{WallMs: 1704931200000, Logical: 7, Node: 42}, Payload: []byte("hello")}
	got, err := EncodeRecord(1, rec)
	if err != nil {
		t.Fatal(err)
	}
	want := goldenBytes(t, "record")
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded record\n% x\nFORMAT.md says\n% x", got, want)
	}
	e, n, err := DecodeRecord(want)
	if err != nil || n != len(want) {
		t.Fatalf("DecodeRecord(golden) = %d, %v", n, err)
	}
	rec.State = Pending
	if e.LSN != 1 || e.Type != rec.Type || e.State != rec.State || e.HLC != rec.HLC || string(e.Payload) != "hello" {
		t.Fatalf("decoded %+v", e)
	}
}

func TestFormat_GoldenCheckpointMatchesFORMAT(t *testing.T) {
	marks := Watermarks{Regional: 42, Global: 40, Applied: 39, Compacted: 16}
	want := goldenBytes(t, "checkpoint")
	if got := encodeCheckpoint(marks); !bytes.Equal(got, want) {
		t.Fatalf("encoded checkpoint\n% x\nFORMAT.md says\n% x", got, want)
	}
	if got, err := decodeCheckpoint(want); err != nil || got != marks {
		t.Fatalf("decodeCheckpoint(golden) = %+v, %v", got, err)
	}
}

func TestFormat_ConstantsMatchFORMAT(t *testing.T) {
	doc, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"34-byte header", "length ≤ 1,048,576 (`MaxPayloadBytes`)", "exactly 44 bytes",
		"`%016x.wal`", "`next.wal.tmp`", "`checkpoint.tmp`", "`LOCK`",
	} {
		if !strings.Contains(string(doc), s) {
			t.Errorf("FORMAT.md does not say %q", s)
		}
	}
	if HeaderBytes != 34 || MaxPayloadBytes != 1_048_576 || CheckpointBytes != 44 ||
		segmentName(1) != "0000000000000001.wal" || prepName != "next.wal.tmp" ||
		checkpointTmpName != "checkpoint.tmp" || lockName != "LOCK" {
		t.Fatal("a constant differs from FORMAT.md")
	}
	for l, want := range map[Level]byte{Pending: 1, Regional: 2, Global: 3, Applied: 4, Compacted: 5} {
		if byte(l) != want {
			t.Errorf("%s = %d, FORMAT.md says %d", l, l, want)
		}
	}
}

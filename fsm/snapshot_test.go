package fsm_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// TestSnapshotHeader_Golden pins the header layout of fsm/DESIGN.md; the
// bbolt store writes the same header.
func TestSnapshotHeader_Golden(t *testing.T) {
	b, err := fsm.SnapshotHeader{Kind: fsm.SnapshotKindRecords, AppliedIndex: 0x0102030405}.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	const want = "53545254534e4150" + "0100" + "01" + "00" + "00000000" + "0504030201000000" + "00000000"
	if got := hex.EncodeToString(b[:28]); got != want {
		t.Fatalf("header\n got  %s\n want %s", got, want)
	}
	if len(b) != fsm.SnapshotHeaderLen {
		t.Fatalf("%d bytes", len(b))
	}
	h, err := fsm.DecodeSnapshotHeader(b)
	if err != nil || h.AppliedIndex != 0x0102030405 || h.Kind != fsm.SnapshotKindRecords {
		t.Fatalf("decoded %+v %v", h, err)
	}
}

func TestSnapshotHeader_RefusesForeignOrDamagedHeaders(t *testing.T) {
	good, _ := fsm.SnapshotHeader{Kind: fsm.SnapshotKindStoreImage, AppliedIndex: 7}.AppendBinary(nil)
	for _, tc := range []struct {
		name   string
		mutate func([]byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:31] }},
		{"long", func(b []byte) []byte { return append(b, 0) }},
		{"other magic", func(b []byte) []byte { b[0] = 'X'; return b }},
		{"flipped index bit", func(b []byte) []byte { b[16] ^= 1; return b }},
		{"flipped checksum bit", func(b []byte) []byte { b[31] ^= 0x80; return b }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := fsm.DecodeSnapshotHeader(tc.mutate(bytes.Clone(good))); !errors.Is(err, fsm.ErrSnapshot) {
				t.Fatalf("got %v, want ErrSnapshot", err)
			}
		})
	}
}

func TestRestore_RefusesAStoreImage(t *testing.T) {
	h, _ := fsm.SnapshotHeader{Kind: fsm.SnapshotKindStoreImage, AppliedIndex: 7}.AppendBinary(nil)
	if err := newLedger(t).Restore(bytes.NewReader(h)); !errors.Is(err, fsm.ErrSnapshot) {
		t.Fatalf("got %v, want ErrSnapshot", err)
	}
}

package group

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
)

func TestFSMAdapter_EntryEnvelopeRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		batches [][]byte
	}{
		{name: "one batch", batches: [][]byte{{1, 2, 3}}},
		{name: "three batches", batches: [][]byte{{1}, bytes.Repeat([]byte{7}, 200), {9, 9}}},
		{name: "largest batch", batches: [][]byte{make([]byte, fsm.MaxBatchBytes)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := AppendEntry(nil, tt.batches)
			if len(data) != EncodedEntryLen(tt.batches) || len(data) > MaxEntryBytes {
				t.Fatalf("encoded %d bytes, EncodedEntryLen %d, limit %d", len(data), EncodedEntryLen(tt.batches), MaxEntryBytes)
			}
			got, err := DecodeEntry(data)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, tt.batches, bytes.Equal) {
				t.Fatal("decoded batches differ")
			}
		})
	}
}

func TestFSMAdapter_EntryEnvelopeRejectsMalformedInput(t *testing.T) {
	big := binary.AppendUvarint([]byte{EntryVersion}, MaxEntryBatches+1)
	tests := []struct {
		name string
		data []byte
	}{
		{name: "empty", data: nil},
		{name: "unknown version", data: []byte{2, 1, 1, 0}},
		{name: "no count", data: []byte{EntryVersion}},
		{name: "zero batches", data: []byte{EntryVersion, 0}},
		{name: "too many batches", data: append(big, make([]byte, 2*(MaxEntryBatches+1))...)},
		{name: "count beyond input", data: []byte{EntryVersion, 3, 1, 0}},
		{name: "non-minimal count", data: []byte{EntryVersion, 0x81, 0x00, 1, 0}},
		{name: "empty batch", data: []byte{EntryVersion, 1, 0, 0}},
		{name: "batch beyond input", data: []byte{EntryVersion, 1, 5, 0}},
		{name: "non-minimal length", data: []byte{EntryVersion, 1, 0x81, 0x00, 0}},
		{name: "trailing bytes", data: []byte{EntryVersion, 1, 1, 0, 0}},
		{name: "over the size limit", data: append([]byte{EntryVersion, 1}, make([]byte, MaxEntryBytes)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DecodeEntry(tt.data); !errors.Is(err, ErrBadEntry) {
				t.Fatalf("DecodeEntry: %v, want ErrBadEntry", err)
			}
		})
	}
}

func TestProposer_BatchHeaderChecks(t *testing.T) {
	good := testkit.MustBatch(t, testkit.JobEvent(1), testkit.JobEvent(2))
	tests := []struct {
		name  string
		batch []byte
		want  int // events; 0: ErrInvalidBatch
	}{
		{name: "valid", batch: good, want: 2},
		{name: "empty", batch: nil},
		{name: "no events", batch: []byte{fsm.BatchVersion, 0}},
		{name: "unknown version", batch: append([]byte{9}, good[1:]...)},
		{name: "too many events", batch: binary.AppendUvarint([]byte{fsm.BatchVersion}, fsm.MaxBatchEvents+1)},
		{name: "too large", batch: append([]byte{fsm.BatchVersion, 1}, make([]byte, fsm.MaxBatchBytes)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := batchEventCount(tt.batch)
			if n != tt.want || (tt.want == 0) != errors.Is(err, ErrInvalidBatch) {
				t.Fatalf("batchEventCount = %d, %v; want %d", n, err, tt.want)
			}
		})
	}
}

// FuzzDecodeEntry: DecodeEntry never panics, allocates at most one slice
// header per two input bytes, and what it accepts re-encodes to the same
// bytes.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(AppendEntry(nil, [][]byte{{1, 2, 3}}))
	f.Add(AppendEntry(nil, [][]byte{{1}, {2, 3}, bytes.Repeat([]byte{4}, 300)}))
	f.Add([]byte{EntryVersion, 0x81, 0x00, 1, 0})
	f.Add([]byte{EntryVersion, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		batches, err := DecodeEntry(data)
		if err != nil {
			if !errors.Is(err, ErrBadEntry) {
				t.Fatalf("error %v does not wrap ErrBadEntry", err)
			}
			return
		}
		if len(batches) > len(data)/minEntryBatchBytes {
			t.Fatalf("%d batches from %d bytes", len(batches), len(data))
		}
		if again := AppendEntry(nil, batches); !bytes.Equal(again, data) {
			t.Fatalf("re-encoding differs:\n%x\n%x", again, data)
		}
	})
}

// A checkpoint mark is the one byte EntryMark; DecodeEntry, which reads
// batches, refuses it (the FSM checks IsMark first), as it refuses longer
// entries starting with the mark's byte.
func TestIsMark_OneByteOnly(t *testing.T) {
	for _, tc := range []struct {
		data []byte
		mark bool
	}{{[]byte{EntryMark}, true}, {[]byte{EntryMark, 0}, false}, {[]byte{EntryVersion}, false}, {nil, false}} {
		if got := IsMark(tc.data); got != tc.mark {
			t.Errorf("IsMark(%x) = %v", tc.data, got)
		}
	}
	if _, err := DecodeEntry([]byte{EntryMark}); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("DecodeEntry of a mark: %v", err)
	}
}

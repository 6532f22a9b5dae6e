package boltstore

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// TestFormat_Golden pins the keys and values of FORMAT.md.
func TestFormat_Golden(t *testing.T) {
	key := make([]byte, sortLen)
	for i := range key {
		key[i] = byte(i + 1)
	}
	job := &fsm.JobState{JobID: "j1", Tenant: "acme", Status: fsm.JobStatusRunning,
		Regions: []fsm.RegionState{{Region: "use1"}}}
	ck := appendChainKey(nil, "acme", 258)
	mark, err := fsm.AppendForwardMark(nil, 300)
	if err != nil {
		t.Fatal(err)
	}
	var names []byte
	for i, b := range allBuckets {
		if i > 0 {
			names = append(names, '|')
		}
		names = append(names, b...)
	}
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"chain key", ck, "61636d65 00 0000000000000102"},
		{"chain key of worker events", appendChainKey(nil, "", 1), "00 0000000000000001"},
		{"head key", appendHeadKey(nil, "acme"), "61636d65 00"},
		{"history key", appendHistoryKey(nil, "j1", key[:2]), "6a31 00 0102"},
		{"index keys", join(indexKeys(nil, job)),
			"74 61636d65 00 6a31 | 73 61636d65 00 02 6a31 | 72 61636d65 00 75736531 00 6a31 | 78 61636d65 00 75736531 00 02 6a31"},
		{"entry", appendEntry(nil, key, ck), hex.EncodeToString(key) + " 0d 61636d65000000000000000102"},
		{"chunk", appendChunk(nil, 1, appendEntry(nil, key, ck)), "01" + hex.EncodeToString(key) + "0d61636d65000000000000000102"},
		{"job value", appendJobValue(nil, &jobValue{state: []byte{0xaa, 0xbb}, sealed: true, sealedMax: [32]byte{31: 9},
			count: 1, tail: appendEntry(nil, key, ck)}),
			"01 03 02 aabb" + strings.Repeat("00", 31) + "09 01" + hex.EncodeToString(key) + "0d61636d65000000000000000102"},
		{"job value without state or sealed chunks", appendJobValue(nil, &jobValue{}), "01 00 00"},
		{"marker", marker{State: markerClean, TxID: 0x0102}.appendBinary(nil),
			"5354525442 4f4c54 01 01 0000 0201000000000000 613ddcf7"},
		{"chain block", blockBytes([][]byte{{0xaa}, {0xbb, 0xcc}}), "02 01 aa 02 bbcc"},
		{"forward mark value", mark, "01 ac02"},
		{"event key", appendEventKey(nil, "acme", fsm.EventID{0: 0xab, 15: 0xcd}), "61636d65 00 ab0000000000000000000000000000cd"},
		{"event key of worker events", appendEventKey(nil, "", fsm.EventID{15: 1}), "00 00000000000000000000000000000001"},
		{"layout", []byte{layoutVersion, layoutV2, layoutV1}, "03 02 01"},
		{"buckets", names, hex.EncodeToString([]byte("meta|chains|events|heads|jobs|history|index|workflows|workers|marks"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := hex.EncodeToString(tc.got), strings.ReplaceAll(strings.ReplaceAll(tc.want, " ", ""), "|", ""); got != want {
				t.Fatalf("\n got  %s\n want %s", got, want)
			}
		})
	}
}

func join(keys [][]byte) []byte {
	var b []byte
	for _, k := range keys {
		b = append(b, k...)
	}
	return b
}

func blockBytes(recs [][]byte) []byte {
	var b []byte
	for _, r := range recs {
		b = appendBlockRecord(b, r)
	}
	return appendBlock(nil, len(recs), b)
}

// Every decoder accepts what its encoder writes and gives it back.
func TestCodecs_RoundTrip(t *testing.T) {
	ck := appendChainKey(nil, "acme", 7)
	var tail []byte
	for i := range 3 {
		var k [sortLen]byte
		fsm.EventKey{HLC: fsmtest.TS(int64(100+i), 0, 1), ID: fsmtest.ID(uint64(i))}.AppendSortable(k[:0])
		tail = appendEntry(tail, k[:], ck)
	}
	v := jobValue{state: []byte{1, 2, 3}, count: 3, tail: tail}
	got, err := decodeJobValue(appendJobValue(nil, &v))
	if err != nil || string(got.state) != string(v.state) || got.count != 3 || string(got.tail) != string(tail) {
		t.Fatalf("job value: %+v %v", got, err)
	}
	if n, entries, err := decodeChunk(appendChunk(nil, 3, tail)); err != nil || n != 3 || string(entries) != string(tail) {
		t.Fatalf("chunk: %d %v", n, err)
	}
	if tenant, seq, err := parseChainKey(ck); err != nil || tenant != "acme" || seq != 7 {
		t.Fatalf("chain key: %q %d %v", tenant, seq, err)
	}
	for _, m := range []marker{{State: markerClean, TxID: 1 << 40}, {State: markerSynced}} {
		if got, err := decodeMarker(m.appendBinary(nil)); err != nil || got != m {
			t.Fatalf("marker %+v: %+v %v", m, got, err)
		}
	}
}

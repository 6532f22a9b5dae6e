package progress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/strata-ledger/strata/internal/golden"
)

func goldenUpdates() (Header, []Update) {
	return Header{KeyID: 7, Seq: 42, Worker: "w1"}, []Update{
		{Workflow: "j1/use1/load/1", Fence: 3, Completed: 1000, Failed: 2},
		{Workflow: "j1/use1/load/2", Fence: 3, Completed: 300, Histogram: Histogram{10: 5, 12: 7}},
	}
}

// TestFrame_EncodingIsGolden pins FORMAT.md's golden frame to the encoder
// and the decoder.
func TestFrame_EncodingIsGolden(t *testing.T) {
	want := golden.Bytes(t, "FORMAT.md", "frame")
	h, ups := goldenUpdates()
	got, err := AppendFrame(nil, h, ups, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded\n% x\nFORMAT.md\n% x", got, want)
	}
	f, err := NewDecoder(keyMap{"w1": testKey}).Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	if wantF := (Frame{Header: h, Updates: ups}); !reflect.DeepEqual(f, wantF) {
		t.Fatalf("decoded %+v, want %+v", f, wantF)
	}
}

// TestEncoder_RoundTripAndFrameBound: random updates come back exactly,
// across as many frames as needed, each within MaxFrameBytes and
// numbered from 1.
func TestEncoder_RoundTripAndFrameBound(t *testing.T) {
	r := seeded(t)
	for _, max := range []int{MinMaxFrameBytes, DefaultMaxFrameBytes, 9000, LimitMaxFrameBytes} {
		enc, err := NewEncoder(EncoderConfig{Worker: "worker-1", KeyID: 7, Key: testKey, MaxFrameBytes: max})
		if err != nil {
			t.Fatal(err)
		}
		dec := NewDecoder(keyMap{"worker-1": testKey})
		ups := randomUpdates(r, 1+r.IntN(2000))
		var got []Update
		seq := uint64(0)
		err = enc.Encode(ups, func(frame []byte) error {
			if len(frame) > max {
				t.Fatalf("max %d: frame of %d bytes", max, len(frame))
			}
			f, err := dec.Decode(frame)
			if err != nil {
				t.Fatalf("max %d: %v", max, err)
			}
			if seq++; f.Seq != seq || f.Worker != "worker-1" || f.KeyID != 7 {
				t.Fatalf("header %+v, want seq %d", f.Header, seq)
			}
			got = append(got, f.Updates...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, ups) { // Encode sorted ups in place
			t.Fatalf("max %d: %d updates came back different", max, len(ups))
		}
		t.Logf("max %d: %d updates in %d frames", max, len(ups), seq)
	}
}

// TestEncoder_RealisticFrameHoldsManyUpdates backs FORMAT.md's "about 110
// updates" per default frame: one worker's instances of one job.
func TestEncoder_RealisticFrameHoldsManyUpdates(t *testing.T) {
	enc, _ := NewEncoder(EncoderConfig{Worker: "worker-1", KeyID: 7, Key: testKey})
	ups := make([]Update, 1000)
	for i := range ups {
		ups[i] = Update{Workflow: workflowID(1, i), Fence: 12, Completed: 123456, Failed: 12}
	}
	frames := 0
	_ = enc.Encode(ups, func([]byte) error { frames++; return nil })
	if per := len(ups) / frames; per < 100 {
		t.Fatalf("%d updates per frame, want at least 100", per)
	} else {
		t.Logf("%d updates per %d-byte frame", per, DefaultMaxFrameBytes)
	}
}

func TestEncoder_EmptyIsOneKeepAliveFrame(t *testing.T) {
	enc, _ := NewEncoder(EncoderConfig{Worker: "w1", KeyID: 7, Key: testKey})
	var frames [][]byte
	_ = enc.Encode(nil, func(f []byte) error { frames = append(frames, bytes.Clone(f)); return nil })
	if len(frames) != 1 || len(frames[0]) != minFrameBytes+1 {
		t.Fatalf("frames %x", frames)
	}
	f, err := NewDecoder(keyMap{"w1": testKey}).Decode(frames[0])
	if err != nil || len(f.Updates) != 0 || f.Seq != 1 {
		t.Fatalf("%+v %v", f, err)
	}
}

func TestEncoder_RefusesInvalid(t *testing.T) {
	long := string(make([]byte, MaxWorkflowBytes+1))
	for _, tc := range []struct {
		name string
		ups  []Update
	}{
		{"empty id", []Update{{Workflow: ""}}},
		{"long id", []Update{{Workflow: long}}},
		{"twice", []Update{{Workflow: "a"}, {Workflow: "a"}}},
		{"histogram too long", []Update{{Workflow: "a", Histogram: make(Histogram, HistogramBuckets+1)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc, _ := NewEncoder(EncoderConfig{Worker: "w1", KeyID: 7, Key: testKey})
			err := enc.Encode(tc.ups, func([]byte) error { t.Fatal("emitted"); return nil })
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
		})
	}
	for _, cfg := range []EncoderConfig{
		{Worker: "", Key: testKey},
		{Worker: string(make([]byte, MaxWorkerBytes+1)), Key: testKey},
		{Worker: "w", Key: testKey[:MinKeyBytes-1]},
		{Worker: "w", Key: testKey, MaxFrameBytes: MinMaxFrameBytes - 1},
		{Worker: "w", Key: testKey, MaxFrameBytes: LimitMaxFrameBytes + 1},
	} {
		if _, err := NewEncoder(cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewEncoder(%+v) = %v, want ErrInvalid", cfg, err)
		}
	}
}

// TestDecoder_RefusesByReason: each kind of bad frame fails with the
// sentinel the receiver counts it by.
func TestDecoder_RefusesByReason(t *testing.T) {
	h, ups := goldenUpdates()
	good, _ := AppendFrame(nil, h, ups, testKey)
	// remac re-signs a modified frame so that the check past the MAC runs.
	remac := func(mod func(b []byte) []byte) []byte {
		b := mod(bytes.Clone(good[:len(good)-MACBytes]))
		e, _ := NewEncoder(EncoderConfig{Worker: "w1", KeyID: 7, Key: testKey})
		return finishFrame(b, 0, offWorker+2, int(binary.LittleEndian.Uint16(b[offWorker+2:])), e.mac, nil)
	}
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 1; return b }
	for _, tc := range []struct {
		name  string
		frame []byte
		want  error
	}{
		{"short", good[:minFrameBytes-1], ErrMalformed},
		{"version", flip(offVersion), ErrMalformed},
		{"flags", flip(offFlags), ErrMalformed},
		{"worker len zero", func() []byte { b := bytes.Clone(good); b[offWorkerLen] = 0; return b }(), ErrMalformed},
		{"worker len past end", func() []byte { b := bytes.Clone(good); b[offWorkerLen] = 64; return b }(), ErrMalformed},
		{"unknown worker", flip(offWorker), ErrUnknownWorker},
		{"unknown key id", flip(offKeyID), ErrUnknownWorker},
		{"bad mac", flip(len(good) - 1), ErrBadMAC},
		{"body changed", flip(offWorker + 6), ErrBadMAC},
		{"seq changed", flip(offSeq), ErrBadMAC},
		{"count too high", remac(func(b []byte) []byte { b[offWorker+2] = 0xff; b[offWorker+3] = 0xff; return b }), ErrMalformed},
		{"count one more", remac(func(b []byte) []byte { b[offWorker+2]++; return b }), ErrMalformed},
		{"trailing byte", remac(func(b []byte) []byte { return append(b, 0) }), ErrMalformed},
		{"prefix past previous", remac(func(b []byte) []byte { b[offWorker+4] = 1; return b }), ErrMalformed},
		{"untrimmed histogram", remac(func(b []byte) []byte { b[len(b)-1] = 0; return b }), ErrMalformed},
		{"ids not increasing", remac(func(b []byte) []byte { b[offWorker+4+2+14+5+2] = '0'; return b }), ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewDecoder(keyMap{"w1": testKey}).Decode(tc.frame)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// TestDecoder_KeyRotationTakesEffect: the decoder asks Keys for every
// frame, so a replaced key refuses frames MAC'd under the old one.
func TestDecoder_KeyRotationTakesEffect(t *testing.T) {
	h, ups := goldenUpdates()
	frame, _ := AppendFrame(nil, h, ups, testKey)
	keys := keyMap{"w1": testKey}
	dec := NewDecoder(keys)
	if _, err := dec.Decode(frame); err != nil {
		t.Fatal(err)
	}
	keys["w1"] = []byte("another key, 16+")
	if _, err := dec.Decode(frame); !errors.Is(err, ErrBadMAC) {
		t.Fatalf("err %v, want ErrBadMAC", err)
	}
	delete(keys, "w1")
	if _, err := dec.Decode(frame); !errors.Is(err, ErrUnknownWorker) {
		t.Fatalf("err %v, want ErrUnknownWorker", err)
	}
}

func TestDecoder_OpenDoesNotAllocateInSteadyState(t *testing.T) {
	enc, _ := NewEncoder(EncoderConfig{Worker: "w1", KeyID: 7, Key: testKey})
	var frame []byte
	_ = enc.Encode(randomUpdates(seeded(t), 20), func(f []byte) error { frame = bytes.Clone(f); return nil })
	dec := NewDecoder(keyMap{"w1": testKey})
	if _, _, err := dec.Open(frame); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = dec.Open(frame) }); n != 0 {
		t.Fatalf("%v allocations per Open", n)
	}
}

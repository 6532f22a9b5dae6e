package progress

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"
)

// fuzzSeeds are valid frames: the golden one, an empty one and a packed
// random one.
func fuzzSeeds() [][]byte {
	h, ups := goldenUpdates()
	g, _ := AppendFrame(nil, h, ups, testKey)
	e, _ := AppendFrame(nil, Header{KeyID: 7, Seq: 1, Worker: "w1"}, nil, testKey)
	enc, _ := NewEncoder(EncoderConfig{Worker: "w1", KeyID: 7, Key: testKey})
	var r []byte
	_ = enc.Encode(randomUpdates(rand.New(rand.NewPCG(1, 2)), 30), func(f []byte) error { r = bytes.Clone(f); return nil })
	return [][]byte{g, e, r}
}

// remac replaces the last MACBytes of b (or appends them) with the MAC of
// the rest under testKey, so the fuzzer reaches the parser behind the MAC.
func remac(b []byte) []byte {
	if len(b) >= MACBytes {
		b = b[:len(b)-MACBytes]
	}
	m := hmac.New(sha256.New, testKey)
	m.Write(b)
	return append(bytes.Clone(b), m.Sum(nil)[:MACBytes]...)
}

// FuzzDecodeFrame: the decoder never panics, bounds what it allocates by
// the frame's length, and what it accepts re-encodes to a frame that
// decodes to the same contents.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dec := NewDecoder(keyMap{"w1": testKey})
		_, _ = dec.Decode(b) // raw: almost always refused at the MAC
		b = remac(b)
		got, err := dec.Decode(b)
		if bound := len(b) / minUpdateBytes * MaxWorkflowBytes; len(dec.ids) > bound || len(dec.views) > len(b)/minUpdateBytes {
			t.Fatalf("%d id bytes, %d views for a %d-byte frame", len(dec.ids), len(dec.views), len(b))
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownWorker) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		again, err := AppendFrame(nil, got.Header, got.Updates, testKey)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", got, err)
		}
		back, err := NewDecoder(keyMap{"w1": testKey}).Decode(again)
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Fatalf("round trip: %+v %v, want %+v", back, err, got)
		}
	})
}

// FuzzTCPStream: reading a stream of length-prefixed frames never panics,
// never returns a frame out of bounds, and a stream of valid frames comes
// back frame by frame.
func FuzzTCPStream(f *testing.F) {
	var stream []byte
	for _, s := range fuzzSeeds() {
		stream = appendStreamFrame(stream, s)
		f.Add(appendStreamFrame(nil, s))
	}
	f.Add(stream)
	f.Add([]byte{0xff, 0xff, 1, 2, 3})
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		buf := make([]byte, DefaultReceiveFrameBytes+1)
		dec := NewDecoder(keyMap{"w1": testKey})
		for range len(b) + 1 { // every frame consumes at least 2 bytes
			n, err := readStreamFrame(r, buf, DefaultReceiveFrameBytes)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if n < minFrameBytes || n > DefaultReceiveFrameBytes {
				t.Fatalf("frame of %d bytes", n)
			}
			_, _ = dec.Decode(buf[:n])
		}
		t.Fatal("stream reading did not end")
	})
}

// TestTCPStream_ValidFramesComeBack is the round trip of the stream framing.
func TestTCPStream_ValidFramesComeBack(t *testing.T) {
	seeds := fuzzSeeds()
	var stream []byte
	for _, s := range seeds {
		stream = appendStreamFrame(stream, s)
	}
	r := bytes.NewReader(stream)
	buf := make([]byte, DefaultReceiveFrameBytes+1)
	for i, want := range seeds {
		n, err := readStreamFrame(r, buf, DefaultReceiveFrameBytes)
		if err != nil || !bytes.Equal(buf[:n], want) {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	if _, err := readStreamFrame(r, buf, DefaultReceiveFrameBytes); err != io.EOF {
		t.Fatalf("after the last frame: %v", err)
	}
}

package hlc

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
)

func TestCompare_TotalOrder(t *testing.T) {
	tests := []struct {
		name string
		a, b Timestamp
		want int
	}{
		{"wall decides", Timestamp{1, 9, 9}, Timestamp{2, 0, 0}, -1},
		{"logical decides", Timestamp{5, 1, 9}, Timestamp{5, 2, 0}, -1},
		{"node decides", Timestamp{5, 1, 2}, Timestamp{5, 1, 1}, 1},
		{"equal", Timestamp{5, 1, 1}, Timestamp{5, 1, 1}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.Compare(tt.b); got != tt.want {
				t.Fatalf("Compare = %d, want %d", got, tt.want)
			}
			if got := tt.b.Compare(tt.a); got != -tt.want {
				t.Fatalf("reverse Compare = %d, want %d", got, -tt.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Timestamp
		wantErr bool
	}{
		{in: "1704931200000:3:42", want: Timestamp{1704931200000, 3, 42}},
		{in: "0:0:0", want: Timestamp{}},
		{in: "9223372036854775807:4294967295:4294967295", want: Timestamp{1<<63 - 1, 1<<32 - 1, 1<<32 - 1}},
		{in: "", wantErr: true},
		{in: "1:2", wantErr: true},
		{in: "1:2:3:4", wantErr: true},
		{in: "-1:0:0", wantErr: true},
		{in: "+1:0:0", wantErr: true},
		{in: "01:0:0", wantErr: true},
		{in: "1: 2:3", wantErr: true},
		{in: "9223372036854775808:0:0", wantErr: true},
		{in: "1:4294967296:0", wantErr: true},
		{in: "1:0:4294967296", wantErr: true},
		{in: "1:0:0:0000000000000000000000000000000000000000000000000", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("Parse(%q) = %v, %v; want ErrInvalid", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
			if s := got.String(); s != tt.in {
				t.Fatalf("String() = %q, want %q", s, tt.in)
			}
		})
	}
}

// TestBinary_Golden pins the 16-byte layout: it is inside the NodeWAL record
// header and the ledger's log encoding, so it must never change.
func TestBinary_Golden(t *testing.T) {
	ts := Timestamp{WallMs: 0x0102030405060708, Logical: 0x0a0b0c0d, Node: 0x11223344}
	want, _ := hex.DecodeString("0807060504030201" + "0d0c0b0a" + "44332211")
	got := ts.AppendBinary(nil)
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendBinary = %x, want %x", got, want)
	}
	put := make([]byte, EncodedLen)
	ts.PutBinary(put)
	if !bytes.Equal(put, want) {
		t.Fatalf("PutBinary = %x, want %x", put, want)
	}
	back, err := DecodeBinary(want)
	if err != nil || back != ts {
		t.Fatalf("DecodeBinary = %v, %v", back, err)
	}
}

func TestDecodeBinary_Rejects(t *testing.T) {
	if _, err := DecodeBinary(make([]byte, EncodedLen-1)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("short input: %v", err)
	}
	b := make([]byte, EncodedLen)
	b[7] = 0x80 // wall above int64
	if _, err := DecodeBinary(b); !errors.Is(err, ErrInvalid) {
		t.Fatalf("negative wall: %v", err)
	}
}

func TestJSON_RoundTrip(t *testing.T) {
	in := struct {
		HLC Timestamp `json:"hlc"`
	}{Timestamp{1704931200000, 3, 42}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"hlc":"1704931200000:3:42"}` {
		t.Fatalf("json = %s", b)
	}
	var out struct {
		HLC Timestamp `json:"hlc"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out != in {
		t.Fatalf("round trip = %v, %v", out, err)
	}
	if err := json.Unmarshal([]byte(`{"hlc":"x"}`), &out); err == nil {
		t.Fatal("bad hlc accepted")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"1:2:3", "0:0:0", "9223372036854775807:4294967295:4294967295", "", "::", "-1:0:0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := Parse(s)
		if err != nil {
			return
		}
		if ts.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, ts.String())
		}
		back, err := Parse(ts.String())
		if err != nil || back != ts {
			t.Fatalf("re-parse %v: %v, %v", ts, back, err)
		}
	})
}

func FuzzDecodeBinary(f *testing.F) {
	f.Add(make([]byte, EncodedLen))
	f.Add(Timestamp{1704931200000, 3, 42}.AppendBinary(nil))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := DecodeBinary(b)
		if err != nil {
			return
		}
		if enc := ts.AppendBinary(nil); !bytes.Equal(enc, b[:EncodedLen]) {
			t.Fatalf("encode(decode(%x)) = %x", b[:EncodedLen], enc)
		}
		if p, err := Parse(ts.String()); err != nil || p != ts {
			t.Fatalf("string round trip of %v: %v, %v", ts, p, err)
		}
	})
}

package gossip

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/memberlist"
)

func validMeta() Meta {
	return Meta{
		Role: RoleManager, Region: "use1", NodeID: "mgr-1",
		APIAddr: "10.0.0.1:8080", RaftAddr: "10.0.0.1:7000", DataAddr: "10.0.0.1:9000", Version: "0.1.0",
	}
}

// largestMeta fills every field to its limit.
func largestMeta() Meta {
	addr := strings.Repeat("h", MaxAddrBytes-5) + ":8080"
	return Meta{
		Role: RoleGate, Region: strings.Repeat("r", MaxRegionBytes), NodeID: strings.Repeat("n", MaxNodeIDBytes),
		APIAddr: addr, RaftAddr: addr, DataAddr: addr, Version: strings.Repeat("v", MaxVersionBytes),
	}
}

func TestMeta_EncodingIsGolden(t *testing.T) {
	b, err := validMeta().AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	const want = "0102" + // v1, manager
		"04" + "75736531" + // use1
		"05" + "6d67722d31" + // mgr-1
		"0d" + "31302e302e302e313a38303830" + // 10.0.0.1:8080
		"0d" + "31302e302e302e313a37303030" + // 10.0.0.1:7000
		"0d" + "31302e302e302e313a39303030" + // 10.0.0.1:9000
		"05" + "302e312e30" // 0.1.0
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("encoding\n got %s\nwant %s", got, want)
	}
}

func TestMeta_RoundTrip(t *testing.T) {
	gate := validMeta()
	gate.Role, gate.DataAddr = RoleGate, ""
	ipv6 := validMeta()
	ipv6.RaftAddr = "[fd00::1]:7000"
	tests := []struct {
		name string
		meta Meta
	}{
		{"manager", validMeta()},
		{"gate without data plane", gate},
		{"ipv6 address", ipv6},
		{"every field at its limit", largestMeta()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.meta.AppendBinary(nil)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if len(b) > memberlist.MetaMaxSize {
				t.Fatalf("encoded %d bytes, memberlist allows %d", len(b), memberlist.MetaMaxSize)
			}
			got, err := DecodeMeta(b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got != tt.meta {
				t.Errorf("decode(encode(m)) = %+v, want %+v", got, tt.meta)
			}
		})
	}
	if b, _ := largestMeta().AppendBinary(nil); len(b) != MaxMetaBytes {
		t.Errorf("largest meta is %d bytes, MaxMetaBytes says %d", len(b), MaxMetaBytes)
	}
}

func TestDecodeMeta_RejectsMalformedInput(t *testing.T) {
	good, err := validMeta().AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	with := func(change func(b []byte) []byte) []byte { return change(bytes.Clone(good)) }
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"version only", []byte{1}},
		{"version 0", with(func(b []byte) []byte { b[0] = 0; return b })},
		{"unknown role", with(func(b []byte) []byte { b[1] = 3; return b })},
		{"truncated in a field", good[:len(good)-1]},
		{"truncated before a field", good[:2+1+4]},
		{"trailing byte on v1", append(bytes.Clone(good), 0)},
		{"region over its limit", with(func(b []byte) []byte { b[2] = MaxRegionBytes + 1; return b })},
		{"empty region", encodeUnchecked(func(m *Meta) { m.Region = "" })},
		{"space in node id", with(func(b []byte) []byte { b[2+1+4+1] = ' '; return b })},
		{"address without port", encodeUnchecked(func(m *Meta) { m.APIAddr = "10.0.0.1" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := DecodeMeta(tt.in)
			if !errors.Is(err, ErrInvalidMeta) {
				t.Fatalf("err = %v, want ErrInvalidMeta", err)
			}
			if m != (Meta{}) {
				t.Errorf("returned %+v with the error, want the zero Meta", m)
			}
		})
	}
}

func TestDecodeMeta_AllocatesOnlyTheFieldStrings(t *testing.T) {
	b, err := largestMeta().AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := DecodeMeta(b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 6 {
		t.Errorf("DecodeMeta allocates %v times, want at most 6 (one per string field)", allocs)
	}
}

func TestDecodeMeta_LaterVersionKeepsV1PrefixAndIgnoresAppendedFields(t *testing.T) {
	b, err := validMeta().AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	b[0] = 2
	b = append(b, 3, 'n', 'e', 'w')
	got, err := DecodeMeta(b)
	if err != nil {
		t.Fatalf("decode v2: %v", err)
	}
	if got != validMeta() {
		t.Errorf("got %+v, want %+v", got, validMeta())
	}
}

func TestMeta_EncodeRejectsInvalid(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Meta)
	}{
		{"no role", func(m *Meta) { m.Role = "" }},
		{"no node id", func(m *Meta) { m.NodeID = "" }},
		{"no version", func(m *Meta) { m.Version = "" }},
		{"region too long", func(m *Meta) { m.Region = strings.Repeat("r", MaxRegionBytes+1) }},
		{"non-ascii region", func(m *Meta) { m.Region = "üse1" }},
		{"raft addr too long", func(m *Meta) { m.RaftAddr = strings.Repeat("h", MaxAddrBytes) + ":1" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validMeta()
			tt.change(&m)
			if _, err := m.AppendBinary(nil); !errors.Is(err, ErrInvalidMeta) {
				t.Errorf("err = %v, want ErrInvalidMeta", err)
			}
			if _, err := NewMetaDelegate(m); !errors.Is(err, ErrInvalidMeta) {
				t.Errorf("NewMetaDelegate err = %v, want ErrInvalidMeta", err)
			}
		})
	}
}

func TestRole_StringAndParse(t *testing.T) {
	tests := []struct {
		name string
		role Role
		want string
	}{
		{"gate", RoleGate, "gate"},
		{"manager", RoleManager, "manager"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.role.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if got, err := ParseRole(tt.want); err != nil || got != tt.role {
				t.Errorf("ParseRole(%q) = %v, %v", tt.want, got, err)
			}
		})
	}
	if _, err := ParseRole("worker"); !errors.Is(err, ErrInvalidMeta) {
		t.Errorf("ParseRole(worker) err = %v, want ErrInvalidMeta", err)
	}
}

func TestMetaDelegate_ServesCurrentMeta(t *testing.T) {
	d, err := NewMetaDelegate(validMeta())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeMeta(d.NodeMeta(memberlist.MetaMaxSize)); err != nil || got != validMeta() {
		t.Fatalf("NodeMeta decodes to %+v, %v", got, err)
	}
	next := validMeta()
	next.Version = "0.2.0"
	if err := d.SetMeta(next); err != nil {
		t.Fatal(err)
	}
	if got := d.Meta(); got != next {
		t.Errorf("Meta() = %+v, want %+v", got, next)
	}
	if got := d.NodeMeta(10); got != nil {
		t.Errorf("NodeMeta(10) = %x, want nil: over the limit", got)
	}
}

// encodeUnchecked encodes validMeta after change, without validating it, to
// build bad input.
func encodeUnchecked(change func(*Meta)) []byte {
	m := validMeta()
	change(&m)
	b := []byte{MetaFormatV1, m.Role.code()}
	for _, v := range m.strings() {
		b = append(b, byte(len(v)))
		b = append(b, v...)
	}
	return b
}

func FuzzDecodeMeta(f *testing.F) {
	for _, m := range []Meta{validMeta(), largestMeta()} {
		b, err := m.AppendBinary(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{1, 1, 0xff})
	f.Add([]byte{2, 2, 1, 'a', 1, 'b', 0, 0, 0, 1, 'v', 9, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMeta(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidMeta) {
				t.Fatalf("error %v does not wrap ErrInvalidMeta", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("decoded an invalid Meta: %v", err)
		}
		enc, err := m.AppendBinary(nil)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if len(enc) > MaxMetaBytes {
			t.Fatalf("re-encoded %d bytes, over MaxMetaBytes %d", len(enc), MaxMetaBytes)
		}
		if b[0] == MetaFormatV1 && !bytes.Equal(enc, b) {
			t.Fatalf("v1 input is not canonical:\n in %x\nout %x", b, enc)
		}
		if b[0] > MetaFormatV1 && !bytes.HasPrefix(b[1:], enc[1:]) {
			t.Fatalf("later version: v1 prefix not kept:\n in %x\nout %x", b, enc)
		}
		if again, err := DecodeMeta(enc); err != nil || again != m {
			t.Fatalf("decode(encode(m)) = %+v, %v; want %+v", again, err, m)
		}
	})
}

func TestFitVersion(t *testing.T) {
	tests := []struct{ in, want string }{
		{"v1.2.3", "v1.2.3"},
		{"(devel)", "(devel)"},
		{"v0.0.0-20261125112826-5c8e7a6424a7", "v0.0.0-5c8e7a6424a7"},
		{"v0.0.0-20261125112826-5c8e7a6424a7+dirty", "v0.0.0-5c8e7a6424a7+dirty"},
		{strings.Repeat("x", 40), strings.Repeat("x", MaxVersionBytes)},
	}
	for _, tt := range tests {
		got := FitVersion(tt.in)
		if got != tt.want {
			t.Errorf("FitVersion(%q) = %q, want %q", tt.in, got, tt.want)
		}
		m := validMeta()
		m.Version = got
		if err := m.Validate(); err != nil {
			t.Errorf("FitVersion(%q) = %q does not validate: %v", tt.in, got, err)
		}
	}
}

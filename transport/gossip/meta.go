package gossip

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/hashicorp/memberlist"
)

// ErrInvalidMeta is returned for node metadata that fails to decode or
// validate.
var ErrInvalidMeta = errors.New("gossip: invalid node metadata")

// Role is what a node does in the cluster (DESIGN §1): the one role type
// of the node, from its configuration ("gate", "manager") to gossip. On
// the wire it is one byte (roleCodes); never change those values.
type Role string

// Roles that gossip. Workers never join a memberlist pool.
const (
	RoleGate    Role = "gate"
	RoleManager Role = "manager"
)

// roleCodes are the wire bytes of the roles. Never change them.
var roleCodes = map[Role]byte{RoleGate: 1, RoleManager: 2}

// code is r's wire byte; 0 (invalid) for a role that has none.
func (r Role) code() byte { return roleCodes[r] }

// roleOfCode is the role of a wire byte; an unknown byte gives a role
// that Validate refuses.
func roleOfCode(b byte) Role {
	for r, c := range roleCodes {
		if c == b {
			return r
		}
	}
	return Role(fmt.Sprintf("role(%d)", b))
}

// String returns "gate" or "manager".
func (r Role) String() string { return string(r) }

// ParseRole parses "gate" or "manager".
func ParseRole(s string) (Role, error) {
	switch s {
	case "gate":
		return RoleGate, nil
	case "manager":
		return RoleManager, nil
	}
	return "", fmt.Errorf("%w: unknown role %q", ErrInvalidMeta, s)
}

// Meta is the metadata a node gossips about itself.
type Meta struct {
	Role     Role
	Region   string // short datacenter code, e.g. "use1"
	NodeID   string
	APIAddr  string // host:port of the HTTP API
	RaftAddr string // host:port of the node's Raft stream layer
	DataAddr string // host:port of the data-plane listener; "" if none
	Version  string // software version
}

// Wire format of Meta — never change a version once released:
//
//	offset  size  field
//	0       1     format version: MetaFormatV1
//	1       1     role
//	2       …     six fields, each a 1-byte length then that many bytes:
//	              region, node id, api addr, raft addr, data addr, version
//
// A later version may only append fields. A decoder reads the v1 prefix of
// any version ≥ 1 and ignores what follows; a v1 record has nothing after
// its version field.
const (
	MetaFormatV1 byte = 1

	MaxRegionBytes  = 16
	MaxNodeIDBytes  = 64
	MaxAddrBytes    = 128
	MaxVersionBytes = 32

	// MaxMetaBytes is the largest encoded v1 Meta.
	MaxMetaBytes = 2 + 6 + MaxRegionBytes + MaxNodeIDBytes + 3*MaxAddrBytes + MaxVersionBytes
)

// The largest Meta must fit memberlist's limit: a compile error otherwise.
var _ [memberlist.MetaMaxSize - MaxMetaBytes]struct{}

// fieldSpec is the rule of one length-prefixed string of the wire format.
type fieldSpec struct {
	name     string
	max      int
	required bool
	addr     bool
}

// fieldSpecs returns the rules of the string fields, in wire order.
func fieldSpecs() [6]fieldSpec {
	return [6]fieldSpec{
		{name: "region", max: MaxRegionBytes, required: true},
		{name: "node id", max: MaxNodeIDBytes, required: true},
		{name: "api addr", max: MaxAddrBytes, addr: true},
		{name: "raft addr", max: MaxAddrBytes, addr: true},
		{name: "data addr", max: MaxAddrBytes, addr: true},
		{name: "version", max: MaxVersionBytes, required: true},
	}
}

// strings returns m's string fields in wire order.
func (m Meta) strings() [6]string {
	return [6]string{m.Region, m.NodeID, m.APIAddr, m.RaftAddr, m.DataAddr, m.Version}
}

// metaOf builds a Meta from a role and string fields in wire order.
func metaOf(role Role, s [6]string) Meta {
	return Meta{Role: role, Region: s[0], NodeID: s[1], APIAddr: s[2], RaftAddr: s[3], DataAddr: s[4], Version: s[5]}
}

// Validate checks the role, the length and characters of every field, and
// that addresses are host:port.
func (m Meta) Validate() error {
	if m.Role != RoleGate && m.Role != RoleManager {
		return fmt.Errorf("%w: role %q", ErrInvalidMeta, m.Role)
	}
	values := m.strings()
	for i, spec := range fieldSpecs() {
		if err := spec.check(values[i]); err != nil {
			return err
		}
	}
	return nil
}

func (f fieldSpec) check(v string) error {
	switch {
	case len(v) > f.max:
		return fmt.Errorf("%w: %s is %d bytes, max %d", ErrInvalidMeta, f.name, len(v), f.max)
	case v == "" && f.required:
		return fmt.Errorf("%w: %s is empty", ErrInvalidMeta, f.name)
	case v == "":
		return nil
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("%w: %s %q has byte %#x at %d: want printable ASCII", ErrInvalidMeta, f.name, v, c, i)
		}
	}
	if f.addr {
		if _, _, err := net.SplitHostPort(v); err != nil {
			return fmt.Errorf("%w: %s %q: %w", ErrInvalidMeta, f.name, v, err)
		}
	}
	return nil
}

// AppendBinary appends the v1 encoding of m to b. m must be valid.
func (m Meta) AppendBinary(b []byte) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return b, err
	}
	b = append(b, MetaFormatV1, m.Role.code())
	for _, v := range m.strings() {
		b = append(b, byte(len(v)))
		b = append(b, v...)
	}
	return b, nil
}

// DecodeMeta decodes and validates a Meta. It allocates only the fields'
// strings, each bounded by its limit, whatever b holds.
func DecodeMeta(b []byte) (Meta, error) {
	if len(b) < 2 {
		return Meta{}, fmt.Errorf("%w: %d bytes, want at least 2", ErrInvalidMeta, len(b))
	}
	version := b[0]
	if version < MetaFormatV1 {
		return Meta{}, fmt.Errorf("%w: format version %d", ErrInvalidMeta, version)
	}
	rest := b[2:]
	var values [6]string
	for i, spec := range fieldSpecs() {
		if len(rest) < 1 {
			return Meta{}, fmt.Errorf("%w: truncated before %s", ErrInvalidMeta, spec.name)
		}
		n := int(rest[0])
		if n > spec.max {
			return Meta{}, fmt.Errorf("%w: %s is %d bytes, max %d", ErrInvalidMeta, spec.name, n, spec.max)
		}
		if len(rest) < 1+n {
			return Meta{}, fmt.Errorf("%w: truncated in %s", ErrInvalidMeta, spec.name)
		}
		values[i] = string(rest[1 : 1+n])
		rest = rest[1+n:]
	}
	if version == MetaFormatV1 && len(rest) != 0 {
		return Meta{}, fmt.Errorf("%w: %d trailing bytes after a v1 record", ErrInvalidMeta, len(rest))
	}
	m := metaOf(roleOfCode(b[1]), values)
	if err := m.Validate(); err != nil {
		return Meta{}, err
	}
	return m, nil
}

// MetaOf decodes the metadata a memberlist node gossips.
func MetaOf(n *memberlist.Node) (Meta, error) {
	m, err := DecodeMeta(n.Meta)
	if err != nil {
		return Meta{}, fmt.Errorf("metadata of node %s: %w", n.Name, err)
	}
	return m, nil
}

// FitVersion shortens a build's version to the MaxVersionBytes a member's
// metadata carries. A Go pseudo-version of a clean or modified checkout
// (v0.0.0-20261125112826-5c8e7a6424a7+dirty, 34 to 40 bytes) keeps its
// base and revision (v0.0.0-5c8e7a6424a7+dirty); anything else longer is
// cut. Without it, a binary built from a clean checkout by plain go build
// (which stamps that pseudo-version) could not join its pools.
func FitVersion(v string) string {
	if len(v) <= MaxVersionBytes {
		return v
	}
	base, rest, ok := strings.Cut(v, "-")
	if stamp, rev, ok2 := strings.Cut(rest, "-"); ok && ok2 && len(stamp) == 14 {
		if short := base + "-" + rev; len(short) <= MaxVersionBytes {
			return short
		}
	}
	return v[:MaxVersionBytes]
}

package keyring

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/memberlist"

	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/transport/api"
)

const testClusterToken = "cluster-secret-0123456789"

// testKey is a distinct, valid 32-byte gossip key.
func testKey(i byte) []byte {
	k := make([]byte, 32)
	for j := range k {
		k[j] = i
	}
	return k
}

func enc(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

// decodeKey is the node's DecodeGossipKey: base64 of 32 bytes.
func decodeKey(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not base64: %w", err)
	}
	if len(b) != 32 {
		return nil, fmt.Errorf("%d bytes, want 32", len(b))
	}
	return b, nil
}

// saver records what the service saves; fail makes the next saves fail
// (a full disk).
type saver struct {
	mu    sync.Mutex
	saved [][]string
	fail  error
}

func (s *saver) save(keys [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	var e []string
	for _, k := range keys {
		e = append(e, enc(k))
	}
	s.saved = append(s.saved, e)
	return nil
}

func (s *saver) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.saved)
}

func (s *saver) last() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.saved) == 0 {
		return nil
	}
	return s.saved[len(s.saved)-1]
}

// newService is a gate (or manager) of use1 whose keyring holds keys,
// the first primary, and that knows the members given.
func newService(t *testing.T, id, region string, gate bool, sv *saver, ms func() []members.Member, keys ...[]byte) (*Service, *memberlist.Keyring) {
	t.Helper()
	kr, err := memberlist.NewKeyring(keys, keys[0])
	if err != nil {
		t.Fatal(err)
	}
	if ms == nil {
		ms = func() []members.Member { return nil }
	}
	return New(Config{NodeID: id, Region: region, Gate: gate, ClusterToken: testClusterToken, Members: ms,
		HTTPClient: func() *http.Client { return &http.Client{Timeout: callTimeout} },
		Keyring:    kr, Save: sv.save, DecodeKey: decodeKey, MaxKeys: 3}), kr
}

// ringOf is kr's keys, encoded, and its primary.
func ringOf(kr *memberlist.Keyring) ([]string, string) {
	var out []string
	for _, k := range kr.GetKeys() {
		out = append(out, enc(k))
	}
	return out, enc(kr.GetPrimaryKey())
}

func op(o string, k []byte) api.KeyringRequest { return api.KeyringRequest{Op: o, Key: enc(k)} }

// TestApply_RotationSavesThePrimaryFirst: install, use, remove, each
// answered with the keyring after it and saved primary first (the file a
// restart reads, primary first); list saves nothing.
func TestApply_RotationSavesThePrimaryFirst(t *testing.T) {
	k1, k2 := testKey(1), testKey(2)
	sv := &saver{}
	s, kr := newService(t, "g1", "use1", true, sv, nil, k1)
	for _, step := range []struct {
		req     api.KeyringRequest
		primary []byte
		saved   []string
	}{
		{op(api.KeyringInstall, k2), k1, []string{enc(k1), enc(k2)}},
		{op(api.KeyringUse, k2), k2, []string{enc(k2), enc(k1)}},
		{op(api.KeyringRemove, k1), k2, []string{enc(k2)}},
	} {
		got := s.apply(step.req)
		if got.Error != "" || got.NodeID != "g1" || got.Region != "use1" {
			t.Fatalf("%s: %+v", step.req.Op, got)
		}
		if got.Primary != enc(step.primary) || enc(kr.GetPrimaryKey()) != enc(step.primary) {
			t.Fatalf("%s: primary %s", step.req.Op, got.Primary)
		}
		if keys, _ := ringOf(kr); !slices.Equal(sorted(got.Keys), sorted(keys)) || !slices.Equal(sorted(keys), sorted(step.saved)) {
			t.Fatalf("%s: answered %v, ring %v, want %v", step.req.Op, got.Keys, keys, step.saved)
		}
		if !slices.Equal(sv.last(), step.saved) {
			t.Fatalf("%s: saved %v, want %v", step.req.Op, sv.last(), step.saved)
		}
	}
	n := sv.count()
	if got := s.apply(api.KeyringRequest{Op: api.KeyringList}); got.Error != "" || len(got.Keys) != 1 || sv.count() != n {
		t.Fatalf("list: %+v, %d saves (was %d)", got, sv.count(), n)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestApply_RefusalsChangeNothing: each refused operation answers why and
// leaves the keyring and its file as they were; installing a key the full
// ring holds already is a no-op, so a retried install step succeeds.
func TestApply_RefusalsChangeNothing(t *testing.T) {
	k1, k2, k3, k9 := testKey(1), testKey(2), testKey(3), testKey(9)
	for _, tc := range []struct {
		name string
		req  api.KeyringRequest
		want string // "" : accepted, a no-op
	}{
		{"use a key not installed", op(api.KeyringUse, k9), "not in the keyring"},
		{"remove the primary", op(api.KeyringRemove, k1), "primary"},
		{"install into a full ring", op(api.KeyringInstall, k9), "3 keys already"},
		{"not base64", api.KeyringRequest{Op: api.KeyringInstall, Key: "%%%"}, "not base64"},
		{"short key", api.KeyringRequest{Op: api.KeyringUse, Key: enc(k1[:16])}, "16 bytes"},
		{"unknown op", op("rotate", k2), `op "rotate"`},
		{"reinstall into a full ring", op(api.KeyringInstall, k3), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sv := &saver{}
			s, kr := newService(t, "g1", "use1", true, sv, nil, k1, k2, k3)
			keys, primary := ringOf(kr)
			got := s.apply(tc.req)
			if tc.want == "" {
				if got.Error != "" {
					t.Fatalf("refused: %s", got.Error)
				}
			} else if !strings.Contains(got.Error, tc.want) || sv.count() != 0 {
				t.Fatalf("error %q, want %q; %d saves", got.Error, tc.want, sv.count())
			}
			if k, p := ringOf(kr); !slices.Equal(k, keys) || p != primary {
				t.Fatalf("ring changed: %v (primary %s), was %v (%s)", k, p, keys, primary)
			}
		})
	}
}

// TestApply_SaveFailureLeavesTheKeyringAsItWas: when the keyring file
// cannot be written the node answers the error and keeps the keyring it
// had, so what it gossips with is what a restart would read.
func TestApply_SaveFailureLeavesTheKeyringAsItWas(t *testing.T) {
	k1, k2, k3 := testKey(1), testKey(2), testKey(3)
	for _, req := range []api.KeyringRequest{op(api.KeyringInstall, k3), op(api.KeyringUse, k2), op(api.KeyringRemove, k2)} {
		t.Run(req.Op, func(t *testing.T) {
			sv := &saver{fail: errors.New("no space left on device")}
			s, kr := newService(t, "g1", "use1", true, sv, nil, k1, k2)
			keys, primary := ringOf(kr)
			got := s.apply(req)
			if !strings.Contains(got.Error, "no space left") {
				t.Fatalf("error %q", got.Error)
			}
			if k, p := ringOf(kr); !slices.Equal(sorted(k), sorted(keys)) || p != primary {
				t.Fatalf("ring after a failed save: %v (primary %s), was %v (%s)", k, p, keys, primary)
			}
			if got.Primary != primary || !slices.Equal(sorted(got.Keys), sorted(keys)) {
				t.Fatalf("answered %v (primary %s), the ring is %v (%s)", got.Keys, got.Primary, keys, primary)
			}
		})
	}
}

// TestKeyringOp_RefusesManagersBadKeysAndUnencryptedNodes: the API's
// route lives on the gates (501 on a manager); a bad key is a 400 before
// any node is asked; a node without a keyring answers so, per node.
func TestKeyringOp_RefusesManagersBadKeysAndUnencryptedNodes(t *testing.T) {
	asked := 0
	ms := func() []members.Member { asked++; return nil }
	m, _ := newService(t, "m1", "use1", false, &saver{}, ms, testKey(1))
	var ae *api.Error
	if _, err := m.KeyringOp(context.Background(), api.KeyringRequest{Op: api.KeyringList}); !errors.As(err, &ae) || ae.Status != http.StatusNotImplemented {
		t.Fatalf("manager: %v", err)
	}
	g, _ := newService(t, "g1", "use1", true, &saver{}, ms, testKey(1))
	if _, err := g.KeyringOp(context.Background(), api.KeyringRequest{Op: api.KeyringInstall, Key: "short"}); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "key:") {
		t.Fatalf("bad key: %v", err)
	}
	if asked != 0 {
		t.Fatalf("a refused call asked the members %d times", asked)
	}
	clear := New(Config{NodeID: "g2", Region: "use1", Gate: true, Members: ms, DecodeKey: decodeKey, MaxKeys: 3})
	out, err := clear.KeyringOp(context.Background(), api.KeyringRequest{Op: api.KeyringList})
	if err != nil || len(out.Nodes) != 1 || !strings.Contains(out.Nodes[0].Error, "not encrypted") {
		t.Fatalf("unencrypted node: %+v %v", out, err)
	}
}

package keyring

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/memberlist"

	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/gossip"
)

// testNet is nodes behind real HTTP servers on 127.0.72.* (this test's
// loopback subnet), each serving its Service's internal endpoint and
// counting the calls it gets.
type testNet struct {
	t      *testing.T
	mu     sync.Mutex
	list   []members.Member
	rings  map[string]*memberlist.Keyring
	calls  map[string]*atomic.Int32
	relays map[string]*atomic.Int32
}

func newTestNet(t *testing.T) *testNet {
	return &testNet{t: t, rings: map[string]*memberlist.Keyring{}, calls: map[string]*atomic.Int32{}, relays: map[string]*atomic.Int32{}}
}

// members is every node's view: all the nodes of the net.
func (n *testNet) members() []members.Member {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.list)
}

// add starts node id (a gate or manager of region) on 127.0.72.ip with
// status; handler, when set, answers instead of the service (a failing
// node).
func (n *testNet) add(id, region string, role gossip.Role, ip int, status members.MemberStatus, handler http.Handler) *Service {
	n.t.Helper()
	s, kr := newService(n.t, id, region, role == gossip.RoleGate, &saver{}, n.members, testKey(1))
	calls, relays := &atomic.Int32{}, &atomic.Int32{}
	if handler == nil {
		handler = s
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.72.%d:0", ip))
	if err != nil {
		n.t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var body bytes.Buffer
		_, _ = body.ReadFrom(r.Body)
		if strings.Contains(body.String(), `"relay":true`) {
			relays.Add(1)
		}
		r.Body = readCloser{&body}
		handler.ServeHTTP(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	n.t.Cleanup(srv.Close)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.list = append(n.list, members.Member{Status: status, Meta: gossip.Meta{Role: role, Region: region, NodeID: id, APIAddr: ln.Addr().String()}})
	n.rings[id], n.calls[id], n.relays[id] = kr, calls, relays
	return s
}

type readCloser struct{ *bytes.Buffer }

func (readCloser) Close() error { return nil }

// TestFanOut_EveryAliveNodeOnceAndRelaysThroughOtherRegionsGates: a gate
// of use1 asks each alive node of its region (never itself, never a dead
// one) once, and one gate of euw1 (g8, the lowest id) to relay; g8 asks
// its own region only (it sees use1 too), so no node gets the operation
// twice (each would count twice in the answer) and nothing loops, though
// use1 sees euw1's second gate and a manager directly. A node that fails
// is named in the answer with its error, and the others still apply it.
func TestFanOut_EveryAliveNodeOnceAndRelaysThroughOtherRegionsGates(t *testing.T) {
	n := newTestNet(t)
	g1 := n.add("g1", "use1", gossip.RoleGate, 1, members.MemberAlive, nil)
	n.add("g2", "use1", gossip.RoleGate, 2, members.MemberAlive, nil)
	n.add("m1", "use1", gossip.RoleManager, 3, members.MemberAlive, nil)
	n.add("m2", "use1", gossip.RoleManager, 4, members.MemberDead, nil)
	n.add("m3", "use1", gossip.RoleManager, 5, members.MemberAlive, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "disk on fire", http.StatusInternalServerError)
	}))
	n.add("g9", "euw1", gossip.RoleGate, 6, members.MemberAlive, nil)
	n.add("m9", "euw1", gossip.RoleManager, 7, members.MemberAlive, nil)
	n.add("g8", "euw1", gossip.RoleGate, 8, members.MemberAlive, nil)
	n.add("m8", "euw1", gossip.RoleManager, 9, members.MemberDead, nil)

	k2 := testKey(2)
	out, err := g1.KeyringOp(context.Background(), op(api.KeyringInstall, k2))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, nd := range out.Nodes {
		ids = append(ids, nd.Region+"/"+nd.NodeID)
		switch nd.NodeID {
		case "m3":
			if !strings.Contains(nd.Error, "disk on fire") {
				t.Errorf("m3's failure: %q", nd.Error)
			}
		default:
			if nd.Error != "" || !slices.Contains(nd.Keys, enc(k2)) {
				t.Errorf("%s: %+v", nd.NodeID, nd)
			}
		}
	}
	want := []string{"euw1/g8", "euw1/g9", "euw1/m9", "use1/g1", "use1/g2", "use1/m1", "use1/m3"}
	if !slices.Equal(ids, want) {
		t.Fatalf("answered by %v, want %v (sorted by region and node)", ids, want)
	}
	for id, wantCalls := range map[string]int32{"g1": 0, "g2": 1, "m1": 1, "m2": 0, "m3": 1, "g8": 1, "g9": 1, "m9": 1, "m8": 0} {
		if got := n.calls[id].Load(); got != wantCalls {
			t.Errorf("%s was called %d times, want %d", id, got, wantCalls)
		}
	}
	for id, wantRelays := range map[string]int32{"g8": 1, "g9": 0, "g2": 0, "m1": 0, "m9": 0} {
		if got := n.relays[id].Load(); got != wantRelays {
			t.Errorf("%s was asked to relay %d times, want %d", id, got, wantRelays)
		}
	}
	for _, id := range []string{"g1", "g2", "m1", "g8", "g9", "m9"} {
		if keys, _ := ringOf(n.rings[id]); len(keys) != 2 {
			t.Errorf("%s holds %v", id, keys)
		}
	}
	if keys, _ := ringOf(n.rings["m2"]); len(keys) != 1 {
		t.Errorf("the dead m2 was changed: %v", keys)
	}
}

// TestServeHTTP_NeedsTheClusterTokenAndAValidBody: the internal endpoint
// refuses a call without the cluster token (401) or with a body it cannot
// read (400), before it changes anything; a manager asked to relay does
// not (only gates relay).
func TestServeHTTP_NeedsTheClusterTokenAndAValidBody(t *testing.T) {
	n := newTestNet(t)
	m := n.add("m1", "use1", gossip.RoleManager, 1, members.MemberAlive, nil)
	n.add("m2", "use1", gossip.RoleManager, 2, members.MemberAlive, nil)
	k2 := enc(testKey(2))
	post := func(token, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(body))
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		m.ServeHTTP(w, r)
		return w
	}
	install := `{"op":"install","key":"` + k2 + `"}`
	for _, tc := range []struct {
		name, token, body string
		status            int
	}{
		{"no token", "", install, http.StatusUnauthorized},
		{"wrong token", "cluster-secret-0123456780", install, http.StatusUnauthorized},
		{"not JSON", testClusterToken, `{"op":`, http.StatusBadRequest},
		{"unknown field", testClusterToken, `{"op":"install","key":"` + k2 + `","force":true}`, http.StatusBadRequest},
	} {
		if w := post(tc.token, tc.body); w.Code != tc.status {
			t.Errorf("%s: %d %s", tc.name, w.Code, w.Body)
		}
		if keys, _ := ringOf(n.rings["m1"]); len(keys) != 1 {
			t.Fatalf("%s changed the ring: %v", tc.name, keys)
		}
	}
	w := post(testClusterToken, `{"op":"install","key":"`+k2+`","relay":true}`)
	var out api.KeyringResponse
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Code != http.StatusOK || len(out.Nodes) != 1 || out.Nodes[0].Error != "" {
		t.Fatalf("install on a manager: %d %s", w.Code, w.Body)
	}
	if got := n.calls["m2"].Load(); got != 0 {
		t.Fatalf("a manager relayed to m2 (%d calls)", got)
	}
}

package members

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/strata-ledger/strata/transport/gossip"
)

// TestMembership_WrongGossipKeyDoesNotJoin: three managers of one region,
// two with the pool's key and one with another; the third never becomes a
// member, the two see each other.
func TestMembership_WrongGossipKeyDoesNotJoin(t *testing.T) {
	good, bad := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	seed := "127.0.152.1:7300"
	start := func(i int, key []byte) *Membership {
		ring, err := memberlist.NewKeyring(nil, key)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Start(Config{
			Self: gossip.Meta{Role: gossip.RoleManager, Region: "use1", NodeID: fmt.Sprintf("m%d", i),
				APIAddr: fmt.Sprintf("127.0.152.%d:7100", i), RaftAddr: fmt.Sprintf("127.0.152.%d:7200", i), Version: "test"},
			LANAddr: fmt.Sprintf("127.0.152.%d:7300", i), LANSeeds: []string{seed},
			LANTimings: FastTimings(), RejoinInterval: 200 * time.Millisecond, Keyring: ring, Logger: gossipTestLogger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		return m
	}
	m1, m2, m3 := start(1, good), start(2, good), start(3, bad)
	alive := func(m *Membership) []string {
		var ids []string
		for _, mem := range m.Members() {
			if mem.Status == MemberAlive {
				ids = append(ids, mem.Meta.NodeID)
			}
		}
		return ids
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(alive(m1)) < 2 || len(alive(m2)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the two nodes with the key never met: %v, %v", alive(m1), alive(m2))
		}
		time.Sleep(20 * time.Millisecond) // polled with a deadline
	}
	// Several rejoin rounds of the stranger (every 200 ms) must not let it in.
	until := time.Now().Add(2 * time.Second)
	for time.Now().Before(until) {
		for _, m := range []*Membership{m1, m2} {
			for _, id := range alive(m) {
				if id == "m3" {
					t.Fatal("a node with the wrong gossip key joined")
				}
			}
		}
		if got := alive(m3); len(got) != 1 {
			t.Fatalf("the stranger sees %v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

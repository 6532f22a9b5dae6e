package cluster

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/peer"
)

// A partition rule on one node cuts node-to-node HTTP in both directions
// (subnet 245): its own calls to the peer fail, and so do the peer's calls
// to it, because the API is served through the fault layer.
func TestNode_PartitionCutsNodeToNodeCallsBothWays(t *testing.T) {
	c := startTestCluster(t, 245)
	a, b := c.node("m1"), c.node("m2")
	ipOf := func(id string) string { return strings.Split(c.cfg(id).RaftAddr, ":")[0] }
	call := func(from *Node, to string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "POST", "http://"+c.cfg(to).HTTPAddr+peer.ProposePath, bytes.NewReader([]byte("x")))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := from.peers.HTTPClient().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	// Unpartitioned: the call reaches m2 (which refuses it without the
	// cluster token: an answer all the same).
	if err := call(a, "m2"); err != nil {
		t.Fatalf("m1 → m2 before the partition: %v", err)
	}
	a.Faults().Partition(ipOf("m2")) // the rule is on m1 only
	if err := call(a, "m2"); err == nil {
		t.Fatal("m1 → m2 answered through a partition m1 holds")
	}
	if err := call(b, "m1"); err == nil {
		t.Fatal("m2 → m1 answered through a partition m1 holds: the API is not served through the fault layer")
	}
	a.Faults().Heal(ipOf("m2"))
	if err := call(b, "m1"); err != nil {
		t.Fatalf("m2 → m1 after healing: %v", err)
	}
}

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/cluster/peer"
	"github.com/strata-ledger/strata/transport/api"
)

// Many clients writing through one follower manager (subnet 242): every
// batch is acknowledged at REGIONAL with its own results, every event is
// in the ledger, and the follower sent fewer forward calls than batches.
func TestNode_FollowerCoalescesForwardedBatches(t *testing.T) {
	c := startTestCluster(t, 242)
	follower := c.followers(RoleManager)[0]
	const clients, perClient = 32, 8
	url := "http://" + c.cfg(follower).HTTPAddr + "/v1/events:batch"
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for j := range perClient {
				body := fmt.Appendf(nil, `{"events":[{"type":"WorkerJoined","body":{"worker":"w-%d-%d","capacity":1}}]}`, i, j)
				req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+testAdminToken)
				resp, err := c.http.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var br api.BatchResponse
				// Duplicate: a forward whose answer was lost (a leader
				// change on a loaded machine) committed, and the
				// pipeline's retry found the event applied.
				if err := json.Unmarshal(b, &br); err != nil || resp.StatusCode != http.StatusOK ||
					br.Durability != "REGIONAL" || len(br.Results) != 1 ||
					(br.Results[0].Outcome != "applied" && br.Results[0].Outcome != "duplicate") {
					t.Errorf("client %d batch %d: %d %s", i, j, resp.StatusCode, b)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	workers, err := c.node(c.leader(RoleManager)).ledger.Workers()
	if err != nil || len(workers) != clients*perClient {
		t.Fatalf("leader has %d workers (%v), want %d", len(workers), err, clients*perClient)
	}
	reg := c.node(follower).reg
	calls := testkit.MetricValue(t, reg, "strata_pipeline_forward_call_batches")
	forwarded := testkit.MetricValue(t, reg, "strata_pipeline_forwarded_total")
	t.Logf("%v batches forwarded in %v calls", forwarded, calls)
	if forwarded < clients*perClient || calls >= forwarded {
		t.Fatalf("%v batches forwarded in %v calls: want ≥ %d batches in fewer calls", forwarded, calls, clients*perClient)
	}
}

// The propose-many endpoint (subnet 243) refuses a call without the
// cluster token and a malformed envelope as a whole, a bad batch inside a
// good envelope alone, and changes nothing.
func TestNode_ProposeManyRefusesBadCalls(t *testing.T) {
	c := startTestCluster(t, 243)
	leader := c.leader(RoleManager)
	if err := c.node(leader).raft.Raft.Barrier(nodeTestWait).Error(); err != nil {
		t.Fatal(err) // the leader has applied what its election committed
	}
	// What the refused calls must not do is propose: the proposer's entry
	// count (the replica checker's anti-entropy marks, which may land at
	// any time, bypass it; they moved the applied index in a CI run).
	proposed := func() float64 {
		return testkit.MetricValue(t, c.node(leader).reg, "strata_pipeline_proposer_entries_total")
	}
	before := proposed()
	post := func(token string, body []byte) (int, []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), nodeTestWait)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+c.cfg(leader).HTTPAddr+peer.ProposeManyPath, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if status, b := post(testAdminToken, []byte{group.EntryVersion, 1, 1, 'x'}); status != http.StatusUnauthorized {
		t.Fatalf("without the cluster token: %d %s", status, b)
	}
	for _, body := range [][]byte{nil, {9}, {group.EntryVersion, 2, 1, 'x'}} {
		status, b := post(testClusterToken, body)
		var out peer.ProposeManyResponse
		if status != http.StatusBadRequest || json.Unmarshal(b, &out) != nil || len(out.Batches) != 1 || out.Batches[0].Error == nil {
			t.Fatalf("envelope %q: %d %s, want 400 with one error answer", body, status, b)
		}
	}
	status, b := post(testClusterToken, []byte{group.EntryVersion, 1, 1, 'x'})
	var out peer.ProposeManyResponse
	if status != http.StatusOK || json.Unmarshal(b, &out) != nil || len(out.Batches) != 1 || out.Batches[0].Status != http.StatusBadRequest {
		t.Fatalf("a bad batch in a good envelope: %d %s, want 200 with the batch's 400", status, b)
	}
	if after := proposed(); after != before {
		t.Fatalf("the leader proposed %v entries on refused calls", after-before)
	}
}

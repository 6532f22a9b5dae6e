package cluster

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/strata-ledger/strata/antientropy"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/peer"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

func TestNode_JobsThroughEveryNode(t *testing.T) {
	c := startTestCluster(t, 231)
	// A manager forwards the submit to its region's gate; a gate follower
	// forwards the proposal to the leader.
	r := c.submitJob("m1", "", "k1")
	if r.status != http.StatusCreated {
		t.Fatalf("submit: %d %s", r.status, r.body)
	}
	var sub api.SubmitJobResponse
	r.decode(t, &sub)
	if sub.Durability != "GLOBAL" || !strings.HasPrefix(sub.Session, "global:") || r.header.Get(api.HeaderSession) != sub.Session {
		t.Fatalf("submit answer %+v, session header %q", sub, r.header.Get(api.HeaderSession))
	}

	// Same key and body: the same job, on any node. Other body: 409.
	for _, id := range []string{"g1", "g2", "g3", "m2"} {
		again := c.submitJob(id, "", "k1")
		var s2 api.SubmitJobResponse
		again.decode(t, &s2)
		if again.status != http.StatusOK || s2.JobID != sub.JobID || !s2.Existing {
			t.Fatalf("%s: repeat: %d %s", id, again.status, again.body)
		}
	}
	if r := c.call("g2", "POST", "/v1/jobs", testAcmeToken, jobBody("acme", "k1", "11m")); r.status != http.StatusConflict {
		t.Fatalf("same key, other body: %d %s", r.status, r.body)
	}

	// Every node answers a strong read and a session read with the job.
	for _, cfg := range c.cfgs {
		for _, q := range []string{"?consistency=strong", "?consistency=session", "?consistency=bounded", ""} {
			r := c.call(cfg.NodeID, "GET", "/v1/jobs/"+sub.JobID+q, testAcmeToken, nil, api.HeaderSession, sub.Session)
			var js fsm.JobState
			r.decode(t, &js)
			if r.status != http.StatusOK || js.JobID != sub.JobID || js.Status != fsm.JobStatusPending {
				t.Fatalf("%s %s: %d %s", cfg.NodeID, q, r.status, r.body)
			}
		}
	}

	// List, cancel, history.
	var list api.JobList
	c.call("g3", "GET", "/v1/jobs?status=PENDING", testAcmeToken, nil).decode(t, &list)
	if len(list.Jobs) != 1 || list.Jobs[0].JobID != sub.JobID {
		t.Fatalf("list: %+v", list)
	}
	r = c.call("m3", "POST", "/v1/jobs/"+sub.JobID+"/cancel", testAcmeToken, []byte(`{"reason":"test","requestor":"alice"}`))
	var cr api.CancelJobResponse
	r.decode(t, &cr)
	if r.status != http.StatusOK || cr.Outcome != "applied" || cr.Durability != "GLOBAL" {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	var js fsm.JobState
	c.call("g1", "GET", "/v1/jobs/"+sub.JobID, testAcmeToken, nil).decode(t, &js)
	if js.Status != fsm.JobStatusCancelling || js.Fence != 2 {
		t.Fatalf("after cancel: %s fence %d", js.Status, js.Fence)
	}
	var events api.EventList
	c.call("g2", "GET", "/v1/jobs/"+sub.JobID+"/events", testAcmeToken, nil).decode(t, &events)
	if len(events.Events) != 2 || events.Events[0].Type != fsm.TypeJobCreated || events.Events[1].Type != fsm.TypeJobCancellationRequested {
		t.Fatalf("events: %+v", events)
	}
}

func TestNode_BadInputIsRefusedAndChangesNothing(t *testing.T) {
	c := startTestCluster(t, 232)
	r := c.submitJob("g1", "", "")
	var sub api.SubmitJobResponse
	r.decode(t, &sub)
	jobPath := "/v1/jobs/" + sub.JobID
	big := append([]byte(`{"tenant":"acme","regions":["use1"],"timeout":"1m","workflows":[{"name":"`), make([]byte, httpx.MaxRequestBytes)...)
	accepted := `{"type":"JobAccepted","body":{"region":"use1","worker_count":1}}`
	manyEvents := `{"events":[` + strings.Repeat(accepted+`,`, fsm.MaxBatchEvents) + accepted + `]}`
	tests := []struct {
		name, node, method, path, token, body string
		status                                int
	}{
		{"malformed json", "g1", "POST", "/v1/jobs", testAcmeToken, `{"tenant":`, 400},
		{"unknown field", "g2", "POST", "/v1/jobs", testAcmeToken, `{"tenant":"acme","color":"red"}`, 400},
		{"two values", "g1", "POST", "/v1/jobs", testAcmeToken, `{"tenant":"acme"}{}`, 400},
		{"invalid spec", "g1", "POST", "/v1/jobs", testAcmeToken, `{"tenant":"acme","regions":[],"timeout":"1m","workflows":[]}`, 400},
		{"unknown region", "g1", "POST", "/v1/jobs", testAcmeToken, `{"tenant":"acme","regions":["mars1"],"timeout":"1m","workflows":[{"name":"w","count":1,"duration":"1s","rate":1}]}`, 400},
		{"oversized body", "g1", "POST", "/v1/jobs", testAcmeToken, string(big), 413},
		{"too many events", "g1", "POST", "/v1/events:batch", testAdminToken, manyEvents, 413},
		{"bad durability", "g1", "POST", "/v1/jobs?durability=forever", testAcmeToken, string(jobBody("acme", "", "1m")), 400},
		{"durability above tier", "m1", "POST", "/v1/events:batch?durability=global", testAdminToken, `{"events":[{"type":"WorkerJoined","body":{"worker":"w1","capacity":1}}]}`, 400},
		{"bad job id", "g1", "GET", "/v1/jobs/not-a-job", testAcmeToken, "", 400},
		{"bad consistency", "g1", "GET", jobPath + "?consistency=psychic", testAcmeToken, "", 400},
		{"bad session token", "g1", "GET", jobPath + "?consistency=session", testAcmeToken, "", 400},
		{"bad limit", "g1", "GET", "/v1/jobs?limit=0", testAcmeToken, "", 400},
		{"bad cursor", "g1", "GET", "/v1/jobs?cursor=zzz", testAcmeToken, "", 400},
		{"no token", "g1", "POST", "/v1/jobs", "", string(jobBody("acme", "", "1m")), 401},
		{"unknown token", "g1", "GET", jobPath, "nobody-0123456789abc", "", 401},
		{"read-only token writes", "g1", "POST", "/v1/jobs", testReaderToken, string(jobBody("acme", "", "1m")), 403},
		{"other tenant's submit", "g1", "POST", "/v1/jobs", testAcmeToken, string(jobBody("globex", "", "1m")), 403},
		{"other tenant's job", "g1", "GET", jobPath, testGlobexToken, "", 404},
		{"other tenant's cancel", "g1", "POST", jobPath + "/cancel", testGlobexToken, `{"reason":"x","requestor":"y"}`, 404},
		{"other tenant's list", "g1", "GET", "/v1/jobs?tenant=acme", testGlobexToken, "", 403},
		{"operator call without scope", "g1", "POST", "/v1/cluster/raft/transfer-leadership", testAcmeToken, "", 403},
		{"unknown path", "g1", "GET", "/v1/nothing", testAcmeToken, "", 404},
		{"wrong method", "g1", "DELETE", "/v1/jobs", testAcmeToken, "", 405},
		{"internal call without cluster token", "g1", "POST", peer.ProposePath, testAdminToken, "x", 401},
	}
	waitConverged(c)
	before := ledgerStates(c)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			if tt.body != "" {
				body = []byte(tt.body)
			}
			r := c.call(tt.node, tt.method, tt.path, tt.token, body)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			r.apiError(t)
		})
	}
	if after := ledgerStates(c); after != before {
		t.Fatalf("bad requests changed the ledgers:\nbefore %s\nafter  %s", before, after)
	}
	// The job of another tenant is not listed either.
	var list api.JobList
	c.call("g1", "GET", "/v1/jobs", testGlobexToken, nil).decode(t, &list)
	if len(list.Jobs) != 0 {
		t.Fatalf("globex sees %d jobs", len(list.Jobs))
	}
}

// waitConverged waits until every node applied its group's commit index.
func waitConverged(c *testCluster) {
	for _, role := range []Role{RoleGate, RoleManager} {
		lead := c.node(c.leader(role))
		want := lead.ledger.AppliedIndex()
		for _, cfg := range c.cfgs {
			if cfg.Role == role {
				n := c.node(cfg.NodeID)
				c.waitFor(cfg.NodeID+" caught up", func() bool { return n.ledger.AppliedIndex() >= want })
			}
		}
	}
}

// ledgerStates is every node's ledger digest and applied index.
// ledgerStates fingerprints every node's whole ledger state (jobs,
// workflows, workers, chain heads, forward marks) by the root of its
// anti-entropy tree: the applied index moves with the replica check's
// checkpoint marks, which change nothing.
func ledgerStates(c *testCluster) string {
	var b strings.Builder
	for _, cfg := range c.cfgs {
		n := c.node(cfg.NodeID)
		if err := n.tree.Sync(n.ledger.View); err != nil {
			c.t.Fatal(err)
		}
		_ = n.tree.Read(func(t *antientropy.Tree) error {
			root := t.Root()
			fmt.Fprintf(&b, "%s:%d:%x ", cfg.NodeID, t.Len(), root[:4])
			return nil
		})
	}
	return b.String()
}

func TestNode_DurabilityLevelsAndEventBatches(t *testing.T) {
	c := startTestCluster(t, 233)
	tests := []struct{ node, query, want string }{
		{"g2", "?durability=none", "NONE"},
		{"g2", "?durability=local", "LOCAL"},
		{"g3", "?durability=regional", "GLOBAL"}, // rounds up to the gate's tier
		{"m1", "?durability=global", "GLOBAL"},   // forwarded to a gate
	}
	for _, tt := range tests {
		r := c.submitJob(tt.node, tt.query, "")
		var sub api.SubmitJobResponse
		r.decode(t, &sub)
		if r.status != http.StatusCreated || sub.Durability != tt.want {
			t.Fatalf("%s%s: %d %s", tt.node, tt.query, r.status, r.body)
		}
		// Below the tier it still climbs: the job shows up.
		c.waitFor("job "+sub.JobID, func() bool {
			return c.call("g1", "GET", "/v1/jobs/"+sub.JobID, testAcmeToken, nil).status == http.StatusOK
		})
	}
	// Regional events land in the managers' ledger through any node.
	batch := []byte(`{"events":[{"type":"WorkerJoined","body":{"worker":"w1","capacity":4}},` +
		`{"type":"WorkerJoined","body":{"worker":"w2","capacity":4}}]}`)
	for _, node := range []string{"g1", "m2"} {
		r := c.call(node, "POST", "/v1/events:batch", testAdminToken, batch)
		var br api.BatchResponse
		r.decode(t, &br)
		if r.status != http.StatusOK || br.Durability != "REGIONAL" || len(br.Results) != 2 {
			t.Fatalf("%s: batch: %d %s", node, r.status, r.body)
		}
		want := "applied"
		if node == "m2" {
			want = "rejected" // the same workers again: already active
		}
		for _, res := range br.Results {
			if res.Outcome != want {
				t.Fatalf("%s: outcome %s, want %s: %s", node, res.Outcome, want, r.body)
			}
		}
	}
	// Every manager ends up with both workers.
	for _, id := range []string{"m1", "m2", "m3"} {
		led := c.node(id).ledger
		c.waitFor(id+" has both workers", func() bool {
			workers, err := led.Workers()
			return err == nil && len(workers) == 2
		})
	}
}

func TestNode_SessionReadsSeeOwnWritesOnEveryNode(t *testing.T) {
	c := startTestCluster(t, 234)
	for i := range 5 {
		r := c.submitJob(c.cfgs[i%3].NodeID, "", "")
		var sub api.SubmitJobResponse
		r.decode(t, &sub)
		for _, cfg := range c.cfgs {
			r := c.call(cfg.NodeID, "GET", "/v1/jobs/"+sub.JobID+"?consistency=session", testAcmeToken, nil, api.HeaderSession, sub.Session)
			if r.status != http.StatusOK {
				t.Fatalf("write %d, session read on %s: %d %s", i, cfg.NodeID, r.status, r.body)
			}
		}
	}
}

func TestNode_StrongReadOnPartitionedLeaderIsNeverStale(t *testing.T) {
	t.Parallel() // it mostly waits out Raft and gossip timeouts, on its own subnet
	c := startTestCluster(t, 235)
	r := c.submitJob("g1", "", "")
	var sub api.SubmitJobResponse
	r.decode(t, &sub)
	old := c.leader(RoleGate)
	isolate(c, old, "g1", "g2", "g3")
	// The majority elects a new leader and cancels the job there.
	var lead string
	c.waitFor("a new gate leader", func() bool {
		for _, id := range []string{"g1", "g2", "g3"} {
			if id != old && c.node(id).raft.Raft.State() == raft.Leader {
				lead = id
				return true
			}
		}
		return false
	})
	r = c.call(lead, "POST", "/v1/jobs/"+sub.JobID+"/cancel", testAcmeToken, []byte(`{"reason":"x","requestor":"y"}`))
	if r.status != http.StatusOK {
		t.Fatalf("cancel on the new leader: %d %s", r.status, r.body)
	}
	// The old leader must fail, or forward to the new leader: never serve
	// the PENDING job it still has.
	for range 3 {
		r := c.call(old, "GET", "/v1/jobs/"+sub.JobID+"?consistency=strong", testAcmeToken, nil)
		switch r.status {
		case http.StatusOK:
			var js fsm.JobState
			r.decode(t, &js)
			if js.Status != fsm.JobStatusCancelling {
				t.Fatalf("stale strong read on the partitioned former leader: %s", js.Status)
			}
		case http.StatusServiceUnavailable:
			r.apiError(t)
		default:
			t.Fatalf("strong read: %d %s", r.status, r.body)
		}
	}
	// An eventual read there is allowed to be stale: it is local.
	var js fsm.JobState
	c.call(old, "GET", "/v1/jobs/"+sub.JobID+"?consistency=eventual", testAcmeToken, nil).decode(t, &js)
	if js.Status != fsm.JobStatusPending {
		t.Fatalf("eventual read on the isolated node: %s, want its local PENDING", js.Status)
	}
}

func TestNode_BoundedReadOnAStaleFollowerForwardsOrRefuses(t *testing.T) {
	t.Parallel() // it mostly waits out Raft and gossip timeouts, on its own subnet
	c := startTestCluster(t, 236)
	r := c.submitJob("g1", "", "")
	var sub api.SubmitJobResponse
	r.decode(t, &sub)
	path := "/v1/jobs/" + sub.JobID + "?consistency=bounded&max_staleness=200ms"
	gf := c.followers(RoleGate)[0]
	isolate(c, gf, "g1", "g2", "g3")
	c.waitFor(gf+" loses contact", func() bool { return c.node(gf).raft.LastContact() > 300*time.Millisecond })
	r = c.call(gf, "GET", path, testAcmeToken, nil)
	switch r.status {
	case http.StatusOK:
		if lc := r.header.Get(api.HeaderLastContact); lc != "0" {
			t.Fatalf("bounded read served by a node %s ms behind its leader", lc)
		}
	case http.StatusServiceUnavailable:
		r.apiError(t)
	default:
		t.Fatalf("bounded read on isolated %s: %d %s", gf, r.status, r.body)
	}
}

// isolate cuts node id off from the other members of group, both ways,
// through their fault layers (Raft and gossip).
func isolate(c *testCluster, id string, group ...string) {
	ipOf := func(n string) string { return strings.Split(c.cfg(n).RaftAddr, ":")[0] }
	for _, other := range group {
		if other == id {
			continue
		}
		c.node(id).Faults().Partition(ipOf(other))
		c.node(other).Faults().Partition(ipOf(id))
	}
}

func TestNode_OperatorCalls(t *testing.T) {
	c := startTestCluster(t, 237)
	var st api.RaftStatus
	c.call("m1", "GET", "/v1/cluster/raft", testAdminToken, nil).decode(t, &st)
	if len(st.Groups) != 1 || st.Groups[0].Name != "use1" || len(st.Groups[0].Peers) != 3 || st.Groups[0].Leader == "" {
		t.Fatalf("raft status: %+v", st)
	}
	var ml api.MemberList
	c.call("g1", "GET", "/v1/cluster/members", testAdminToken, nil).decode(t, &ml)
	if len(ml.Members) != 6 {
		t.Fatalf("members: %+v", ml)
	}

	// Transfer leadership from any node: the call reaches the leader. An
	// election of its own between reading the leader and the call (a
	// loaded machine) answers 503 "no leader is known": try again.
	var r reply
	c.waitFor("a transfer from a follower moves leadership", func() bool {
		old := c.leader(RoleManager)
		r = c.call(c.followers(RoleManager)[0], "POST", "/v1/cluster/raft/transfer-leadership", testAdminToken, nil)
		if r.status == http.StatusServiceUnavailable {
			return false
		}
		var op api.OperatorResponse
		r.decode(t, &op)
		if r.status != http.StatusOK || op.Leader == old || op.Leader == "" {
			t.Fatalf("transfer: %d %s (old leader %s)", r.status, r.body, old)
		}
		return true
	})

	// Remove a stopped manager, then let it back in with its data.
	victim := c.followers(RoleManager)[0]
	addr := c.cfg(victim).RaftAddr
	c.stop(victim)
	r = c.call(c.leader(RoleManager), "DELETE", "/v1/cluster/raft/peers/"+victim, testAdminToken, nil)
	if r.status != http.StatusOK {
		t.Fatalf("remove: %d %s", r.status, r.body)
	}
	if r := c.call(c.leader(RoleManager), "DELETE", "/v1/cluster/raft/peers/"+victim, testAdminToken, nil); r.status != http.StatusNotFound {
		t.Fatalf("remove twice: %d %s", r.status, r.body)
	}
	c.start(victim)
	body := fmt.Appendf(nil, `{"node_id":%q,"raft_addr":%q}`, victim, addr)
	var member string
	for _, f := range c.followers(RoleManager) {
		if f != victim {
			member = f
		}
	}
	r = c.call(member, "POST", "/v1/cluster/raft/join", testAdminToken, body)
	if r.status != http.StatusOK {
		t.Fatalf("join: %d %s", r.status, r.body)
	}
	c.waitReady(victim)
	// Ready can come before the victim has the entry that added it back
	// (its log already holds the one that removed it): wait for it.
	c.waitFor(victim+" to see 3 peers after rejoining", func() bool {
		var st api.RaftStatus
		c.call(victim, "GET", "/v1/cluster/raft", testAdminToken, nil).decode(t, &st)
		return len(st.Groups) == 1 && len(st.Groups[0].Peers) == 3
	})
}

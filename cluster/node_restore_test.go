package cluster

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Disaster recovery through Raft: a snapshot saved from the gates' group
// (GET /v1/snapshot) and posted back to its leader makes every gate take
// on the state it holds — the jobs submitted after it are gone — and the
// group keeps taking writes. A damaged snapshot is refused and changes
// nothing; a follower sends the caller to the leader. (Issue 15; subnet
// 251.)
func TestSnapshot_RestoreThroughRaft(t *testing.T) {
	c := startTestCluster(t, 251)
	submit := func() string {
		t.Helper()
		r := c.submitJob("g1", "", "")
		var sub api.SubmitJobResponse
		r.decode(t, &sub)
		if r.status != http.StatusCreated {
			t.Fatalf("submit: %d %s", r.status, r.body)
		}
		return sub.JobID
	}
	kept := []string{submit(), submit()}
	leader := c.leader(RoleGate)
	snap := c.call(leader, "GET", "/v1/snapshot", testAdminToken, nil)
	if snap.status != http.StatusOK {
		t.Fatalf("snapshot: %d %s", snap.status, snap.body)
	}
	want, _, err := c.node(leader).ledger.Digest()
	if err != nil {
		t.Fatal(err)
	}
	gone := submit()
	if r := c.call(leader, "GET", "/v1/snapshot", testAcmeToken, nil); r.status != http.StatusForbidden {
		t.Fatalf("snapshot with a tenant token: %d", r.status)
	}

	damaged := bytes.Clone(snap.body)
	damaged[len(damaged)/2] ^= 1
	if r := c.call(leader, "POST", "/v1/snapshot", testAdminToken, damaged); r.status != http.StatusBadRequest {
		t.Fatalf("damaged snapshot: %d %s", r.status, r.body)
	}
	if _, err := c.node(leader).ledger.JobByID(gone); err != nil {
		t.Fatalf("a refused restore changed the ledger: %v", err)
	}
	follower := c.followers(RoleGate)[0]
	if r := c.call(follower, "POST", "/v1/snapshot", testAdminToken, snap.body); r.status != http.StatusMisdirectedRequest {
		t.Fatalf("restore at a follower: %d %s", r.status, r.body)
	}

	// Under load the leader can lose its place while Raft commits the
	// restore (503, "leadership lost while committing log") or before
	// (421): the restore goes again to the leader of the moment.
	var r reply
	c.waitFor("a restore at the gates' leader", func() bool {
		r = c.call(c.leader(RoleGate), "POST", "/v1/snapshot", testAdminToken, snap.body)
		return r.status != http.StatusMisdirectedRequest && r.status != http.StatusServiceUnavailable
	})
	var rr api.RestoreResponse
	r.decode(t, &rr)
	if r.status != http.StatusOK || rr.Digest != want.String() {
		t.Fatalf("restore: %d %s", r.status, r.body)
	}
	for _, g := range []string{"g1", "g2", "g3"} {
		c.waitFor(g+" took on the snapshot", func() bool {
			d, _, err := c.node(g).ledger.Digest()
			return err == nil && d == want
		})
		for _, id := range kept {
			if _, err := c.node(g).ledger.JobByID(id); err != nil {
				t.Fatalf("%s lost %s, which the snapshot holds: %v", g, id, err)
			}
		}
		if _, err := c.node(g).ledger.JobByID(gone); err == nil {
			t.Fatalf("%s still holds %s, submitted after the snapshot", g, gone)
		}
	}
	after := submit()
	c.waitFor("a write after the restore on every gate", func() bool {
		for _, g := range []string{"g1", "g2", "g3"} {
			if s, err := c.node(g).ledger.JobByID(after); err != nil || s.Status != fsm.JobStatusPending {
				return false
			}
		}
		return true
	})
}

package cluster

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/cluster/backup"
	"github.com/strata-ledger/strata/cluster/group"
)

// A snapshot names its group, index and term, and a leader refuses
// another group's: the gates' snapshot posted to the region's leader, or
// the region's to the gates' leader, is a 400 naming both groups and
// changes nothing. A bare snapshot (written before snapshots named their
// group) is refused unless ?group= confirms this group. (Issue 15;
// subnet 76.)
func TestSnapshot_AnotherGroupsSnapshotIsRefused(t *testing.T) {
	c := startTestCluster(t, 76)
	ids := c.submitJobs(3)
	gl, ml := c.leader(RoleGate), c.leader(RoleManager)
	c.waitFor("the region holds the jobs", func() bool {
		_, err := c.node(ml).ledger.JobByID(ids[2])
		return err == nil
	})
	get := func(id, want string) []byte {
		t.Helper()
		r := c.call(id, "GET", "/v1/snapshot", testAdminToken, nil)
		if r.status != http.StatusOK {
			t.Fatalf("snapshot at %s: %d %s", id, r.status, r.body)
		}
		env, _, ok, err := backup.ReadEnvelope(bytes.NewReader(r.body))
		term := c.node(id).raft.Status().Term
		if err != nil || !ok || env.Group != want || env.Index == 0 || env.Term == 0 || env.Term > term {
			t.Fatalf("snapshot at %s: envelope %+v (term now %d) %v %v", id, env, term, ok, err)
		}
		return r.body
	}
	gsnap, msnap := get(gl, group.GlobalName), get(ml, "use1")

	file := filepath.Join(t.TempDir(), "global.snap")
	if err := os.WriteFile(file, gsnap, 0o600); err != nil {
		t.Fatal(err)
	}
	info, err := backup.Inspect(file)
	if err != nil || info.Group != group.GlobalName || info.Jobs != 3 || info.Tenants != 1 {
		t.Fatalf("inspect the gates' snapshot: %+v %v", info, err)
	}

	digests := func() [2]string {
		gd, _, err1 := c.node(gl).ledger.Digest()
		md, _, err2 := c.node(ml).ledger.Digest()
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		return [2]string{gd.String(), md.String()}
	}
	before := digests()
	// post sends body to the group's leader of the moment: a leader that
	// lost its place meanwhile answers 421, and the post goes again.
	post := func(role Role, query string, body []byte) (string, reply) {
		t.Helper()
		for {
			id := c.leader(role)
			if r := c.call(id, "POST", "/v1/snapshot"+query, testAdminToken, body); r.status != http.StatusMisdirectedRequest {
				return id, r
			}
		}
	}
	refused := func(role Role, query string, body []byte, says ...string) {
		t.Helper()
		id, r := post(role, query, body)
		if r.status != http.StatusBadRequest {
			t.Fatalf("POST %s at %s: %d %s", query, id, r.status, r.body)
		}
		msg := r.apiError(t).Message
		for _, s := range says {
			if !strings.Contains(msg, s) {
				t.Fatalf("POST %s at %s: %q lacks %q", query, id, msg, s)
			}
		}
	}
	refused(RoleManager, "", gsnap, "of group global", "leads group use1")
	refused(RoleGate, "", msnap, "of group use1", "leads group global")
	refused(RoleManager, "?group=use1", gsnap, "of group global", "leads group use1")
	_, n, _, _ := backup.ReadEnvelope(bytes.NewReader(msnap))
	bare := msnap[n:]
	refused(RoleManager, "", bare, "names no group", "?group=use1")
	refused(RoleManager, "?group=global", bare, "?group=global", "leads group use1")
	if after := digests(); after != before {
		t.Fatalf("a refused restore changed a ledger: %v, was %v", after, before)
	}
	for _, id := range ids {
		if _, err := c.node(ml).ledger.JobByID(id); err != nil {
			t.Fatalf("the region lost %s: %v", id, err)
		}
	}

	if _, r := post(RoleManager, "?group=use1", bare); r.status != http.StatusOK {
		t.Fatalf("a bare snapshot confirmed with ?group=use1: %d %s", r.status, r.body)
	}
	if _, r := post(RoleManager, "", msnap); r.status != http.StatusOK {
		t.Fatalf("the region's own snapshot: %d %s", r.status, r.body)
	}
}

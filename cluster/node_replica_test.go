package cluster

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/transport/api"
)

// A gate stopped cleanly whose ledger file is then altered (one job's
// record changed behind the ledger) is found divergent when it starts
// again: it never reports ready, its reads of the altered job are served
// by the leader instead, and its metrics say so. The others stay verified.
// (Issue 13, replica ↔ replica; subnet 224.)
func TestReplicaCheck_AlteredStoreIsFoundAtStart(t *testing.T) {
	c := startTestCluster(t, 224)
	var ids []string
	for range 3 {
		r := c.submitJob("g1", "", "")
		var sub api.SubmitJobResponse
		r.decode(t, &sub)
		if r.status != http.StatusCreated {
			t.Fatalf("submit: %d %s", r.status, r.body)
		}
		ids = append(ids, sub.JobID)
	}
	victim := c.followers(RoleGate)[0]
	c.waitFor(victim+" holds the jobs", func() bool {
		for _, id := range ids {
			if s, err := c.node(victim).ledger.JobByID(id); err != nil || s == nil {
				return false
			}
		}
		return true
	})
	want, err := c.node(victim).ledger.JobByID(ids[1])
	if err != nil {
		t.Fatal(err)
	}
	c.stop(victim)

	st, err := boltstore.Open(boltstore.Config{Path: filepath.Join(c.cfg(victim).DataDir, "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	altered := want.Clone()
	altered.Events += 1000
	if err := st.Update(func(tx fsm.Tx) error { return tx.PutJob(altered) }); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	n := c.start(victim)
	c.waitFor(victim+" found divergent", func() bool {
		r := c.call(victim, "GET", "/readyz", "", nil)
		return r.status == http.StatusServiceUnavailable && strings.Contains(string(r.body), "diverged")
	})
	if v := testkit.MetricValue(t, n.reg, "strata_antientropy_divergent_replicas"); v != 1 {
		t.Fatalf("strata_antientropy_divergent_replicas = %v on the damaged gate", v)
	}
	r := c.call(victim, "GET", "/v1/jobs/"+ids[1]+"?consistency=eventual", testAcmeToken, nil)
	var got fsm.JobState
	r.decode(t, &got)
	if r.status != http.StatusOK || got.Events != want.Events {
		t.Fatalf("the damaged gate's read of the altered job: %d, %d events (stored %d, the group's %d)",
			r.status, got.Events, altered.Events, want.Events)
	}
	for _, id := range []string{"g1", "g2", "g3"} {
		if id == victim {
			continue
		}
		if r := c.call(id, "GET", "/readyz", "", nil); r.status != http.StatusOK {
			t.Fatalf("%s, undamaged: %d %s", id, r.status, r.body)
		}
	}
}

package cluster

import (
	"encoding/binary"
	"hash/crc32"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/cluster/replica"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/transport/api"
	bolt "go.etcd.io/bbolt"
)

// A gate stopped cleanly whose ledger file is then altered (one job's
// record changed behind the ledger) is found divergent when it starts
// again, rebuilds its ledger from the leader's snapshot, checks again, and
// only then reports ready, serving the group's record. The others stay as
// they were. (Issue 13, replica ↔ replica; subnet 224.)
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

	began := time.Now()
	n := c.start(victim)
	// It finds its ledger divergent, rebuilds it from the leader's
	// snapshot, checks again and only then reports ready.
	c.waitReady(victim)
	t.Logf("gate %s: started, found divergent, rebuilt from the leader and verified in %s", victim, time.Since(began))
	if v := testkit.MetricValue(t, n.reg, "strata_antientropy_repairs_total", "kind", "replica"); v < 1 {
		t.Fatalf("ready without a repair: strata_antientropy_repairs_total = %v", v)
	}
	if v := testkit.MetricValue(t, n.reg, "strata_antientropy_divergent_replicas"); v != 0 {
		t.Fatalf("strata_antientropy_divergent_replicas = %v after the repair", v)
	}
	if v := n.replica.Verdict(); v.State != replica.Verified {
		t.Fatalf("verdict after the repair: %+v", v)
	}
	got, err := n.ledger.JobByID(ids[1])
	if err != nil || got.Events != want.Events {
		t.Fatalf("the repaired gate's job: %v events (altered %d, the group's %d), %v", got.Events, altered.Events, want.Events, err)
	}
	r := c.call(victim, "GET", "/v1/jobs/"+ids[1]+"?consistency=eventual", testAcmeToken, nil)
	var served fsm.JobState
	r.decode(t, &served)
	if r.status != http.StatusOK || served.Events != want.Events {
		t.Fatalf("the repaired gate serves %d: %d events", r.status, served.Events)
	}
	for _, id := range []string{"g1", "g2", "g3"} {
		if id == victim {
			continue
		}
		if r := c.call(id, "GET", "/readyz", "", nil); r.status != http.StatusOK {
			t.Fatalf("%s, undamaged: %d %s", id, r.status, r.body)
		}
		if v := testkit.MetricValue(t, c.node(id).reg, "strata_antientropy_repairs_total", "kind", "replica"); v != 0 {
			t.Fatalf("%s, undamaged, repaired itself", id)
		}
	}
}

// The same for a manager whose ledger file was edited with bbolt directly
// while it was stopped: one worker's record changed, another's deleted.
func TestReplicaCheck_EditedManagerStoreIsRebuilt(t *testing.T) {
	c := startTestCluster(t, 225)
	for _, w := range []string{"wa", "wb"} {
		body := []byte(`{"worker_id":"` + w + `","region":"use1","capacity":2}`)
		if r := c.call("m1", "POST", "/v1/workers", testAdminToken, body); r.status/100 != 2 {
			t.Fatalf("register %s: %d %s", w, r.status, r.body)
		}
	}
	victim := c.followers(RoleManager)[0]
	var want []*fsm.WorkerState
	c.waitFor(victim+" holds both workers", func() bool {
		ws, err := c.node(victim).ledger.Workers()
		want = ws
		return err == nil && len(ws) == 2
	})
	c.stop(victim)

	db, err := bolt.Open(filepath.Join(c.cfg(victim).DataDir, "ledger.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	changed := *want[0]
	changed.Capacity += 7
	rec, err := fsm.AppendWorkerState(nil, &changed)
	if err != nil {
		t.Fatal(err)
	}
	var txid uint64
	if err := db.Update(func(tx *bolt.Tx) error {
		txid = uint64(tx.ID())
		b := tx.Bucket([]byte("workers"))
		if err := b.Put([]byte(changed.ID), rec); err != nil {
			return err
		}
		return b.Delete([]byte(want[1].ID))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// The clean-shutdown marker names the file's last transaction, so the
	// store would see the edit and rebuild itself from the Raft log. Write
	// one for the edited file (fsm/boltstore/marker.go's layout): damage the
	// store cannot see, which only the replica check finds.
	writeCleanMarker(t, filepath.Join(c.cfg(victim).DataDir, "ledger.db.state"), txid)

	began := time.Now()
	n := c.start(victim)
	c.waitReady(victim)
	t.Logf("manager %s: started, found divergent, rebuilt from the leader and verified in %s", victim, time.Since(began))
	if v := testkit.MetricValue(t, n.reg, "strata_antientropy_repairs_total", "kind", "replica"); v < 1 {
		t.Fatalf("ready without a repair: strata_antientropy_repairs_total = %v", v)
	}
	got, err := n.ledger.Workers()
	if err != nil || len(got) != 2 || got[0].Capacity != want[0].Capacity || got[1].ID != want[1].ID {
		t.Fatalf("the repaired manager's workers: %+v %v, want %+v", got, err, want)
	}
}

// writeCleanMarker writes boltstore's clean-shutdown marker for a file
// whose last transaction is txid: magic, version 1, state 1 (clean), two
// reserved bytes, txid, CRC-32C of the 20 bytes before it.
func writeCleanMarker(t *testing.T, path string, txid uint64) {
	t.Helper()
	b := append([]byte("STRTBOLT"), 1, 1, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, txid)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

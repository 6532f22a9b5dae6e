package cluster

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

// Disaster recovery from backups: a cluster takes proved backups of both
// its groups, then every data directory is deleted; a new cluster posts
// each backup to its group's leader and holds every job (same digests)
// and the region's workers again. (Issue 15; subnets 252 and 253.)
func TestBackups_AClusterComesBackFromItsBackups(t *testing.T) {
	backups := t.TempDir()
	a := startTestCluster(t, 252, func(cfg *NodeConfig) {
		cfg.Backup = BackupConfig{Dir: filepath.Join(backups, cfg.NodeID), Interval: time.Hour, Retain: 3}
	})
	ids := a.submitJobs(3)
	if r := a.call("m1", "POST", "/v1/workers", testAdminToken, []byte(`{"worker_id":"wa","region":"use1","capacity":2}`)); r.status/100 != 2 {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	gl, ml := a.node(a.leader(RoleGate)), a.node(a.leader(RoleManager))
	want := map[string]fsm.Hash{}
	for _, id := range ids {
		s, err := gl.ledger.JobByID(id)
		if err != nil {
			t.Fatal(err)
		}
		want[id], _ = s.Digest()
	}
	global, err := gl.backups.Once()
	if err != nil || global.Skipped {
		t.Fatalf("global backup: %+v %v", global, err)
	}
	regional, err := ml.backups.Once()
	if err != nil || regional.Skipped {
		t.Fatalf("regional backup: %+v %v", regional, err)
	}
	a.closeAll()
	for _, cfg := range a.cfgs {
		if err := os.RemoveAll(cfg.DataDir); err != nil {
			t.Fatal(err)
		}
	}

	b := startTestCluster(t, 253)
	for _, tc := range []struct {
		role Role
		path string
	}{{RoleGate, global.Path}, {RoleManager, regional.Path}} {
		body, err := os.ReadFile(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if r := b.call(b.leader(tc.role), "POST", "/v1/snapshot", testAdminToken, body); r.status != http.StatusOK {
			t.Fatalf("restore %s: %d %s", filepath.Base(tc.path), r.status, r.body)
		}
	}
	for _, g := range []string{"g1", "g2", "g3"} {
		b.waitFor(g+" holds every job again", func() bool {
			for id, d := range want {
				s, err := b.node(g).ledger.JobByID(id)
				if err != nil {
					return false
				}
				if got, _ := s.Digest(); got != d {
					return false
				}
			}
			return true
		})
	}
	for _, m := range []string{"m1", "m2", "m3"} {
		b.waitFor(m+" holds the worker again", func() bool {
			ws, err := b.node(m).ledger.Workers()
			return err == nil && len(ws) == 1 && ws[0].ID == "wa"
		})
	}
}

package api

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testClusterFile = `{"data_dir":".strata-dev","token":"dev-token-0123456789","nodes":[
 {"node_id":"use1-mgr1","role":"manager","region":"use1","api_addr":"127.0.10.2:8080"},
 {"node_id":"use1-gate1","role":"gate","region":"use1","api_addr":"127.0.10.1:8080"},
 {"node_id":"euw1-gate1","role":"gate","region":"euw1","api_addr":"127.0.11.1:8080","future_field":true},
 {"node_id":"euw1-mgr1","role":"manager","region":"euw1","api_addr":"127.0.11.2:8080"},
 {"node_id":"use1-mgr2","role":"manager","region":"use1","api_addr":"127.0.10.3:8080"}],
 "workers":[{"node_id":"w-use1-1","role":"worker","region":"use1","pid":42}]}`

func TestLoadClusterFile_GatesFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.json")
	if err := os.WriteFile(path, []byte(testClusterFile), 0o600); err != nil {
		t.Fatal(err)
	}
	cf, err := LoadClusterFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cf.Token != "dev-token-0123456789" {
		t.Errorf("token = %q", cf.Token)
	}
	got, want := strings.Join(cf.APIAddrs(), " "), "127.0.10.1:8080 127.0.11.1:8080 127.0.10.2:8080 127.0.11.2:8080 127.0.10.3:8080"
	if got != want {
		t.Errorf("APIAddrs = %s, want %s", got, want)
	}
	if got, want := strings.Join(cf.ManagerAddrs("use1"), " "), "127.0.10.2:8080 127.0.10.3:8080"; got != want {
		t.Errorf("ManagerAddrs(use1) = %s, want %s", got, want)
	}
	if got := cf.ManagerAddrs("apse1"); len(got) != 0 {
		t.Errorf("ManagerAddrs(apse1) = %v, want none", got)
	}
	if len(cf.Workers) != 1 || cf.Workers[0].NodeID != "w-use1-1" || cf.Workers[0].Role != ClusterRoleWorker || cf.Workers[0].PID != 42 {
		t.Errorf("Workers = %+v", cf.Workers)
	}
}

func TestDecodeClusterFile_WithoutWorkersStillLoads(t *testing.T) {
	cf, err := DecodeClusterFile([]byte(`{"token":"t","nodes":[{"node_id":"use1-gate1","role":"gate","region":"use1","api_addr":"127.0.10.1:8080"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Workers) != 0 || len(cf.APIAddrs()) != 1 {
		t.Fatalf("file of an older dev: %+v", cf)
	}
}

func TestLoadClusterFile_Errors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"not json", "{", "unexpected end"},
		{"no nodes", `{"nodes":[]}`, "no nodes"},
		{"node without api addr", `{"nodes":[{"node_id":"n1"}]}`, "nodes[0]"},
		{"too large", `{"nodes":[]}` + strings.Repeat(" ", MaxClusterFileBytes), "over the limit"},
		{"worker without region", `{"nodes":[{"node_id":"n1","api_addr":"127.0.0.1:1"}],"workers":[{"node_id":"w1"}]}`, "workers[0]"},
		{"too many workers", `{"nodes":[{"node_id":"n1","api_addr":"127.0.0.1:1"}],"workers":[` +
			strings.Repeat(`{"node_id":"w","region":"r"},`, MaxClusterNodes) + `{"node_id":"w","region":"r"}]}`, "workers, over the limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cluster.json")
			if err := os.WriteFile(path, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadClusterFile(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("err = %v, want it to name %s and contain %q", err, path, tt.want)
			}
		})
	}
	if _, err := LoadClusterFile(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: err = %v, want not-exist", err)
	}
}

// FuzzDecodeClusterFile: never panics; an accepted file has 1 to
// MaxClusterNodes nodes, each with an id and an API address.
func FuzzDecodeClusterFile(f *testing.F) {
	f.Add([]byte(testClusterFile))
	f.Add([]byte(`{"nodes":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cf, err := DecodeClusterFile(b)
		if err != nil {
			return
		}
		if len(cf.Nodes) == 0 || len(cf.Nodes) > MaxClusterNodes || len(cf.APIAddrs()) != len(cf.Nodes) {
			t.Fatalf("accepted %d nodes, %d addresses", len(cf.Nodes), len(cf.APIAddrs()))
		}
		if len(cf.Workers) > MaxClusterNodes {
			t.Fatalf("accepted %d workers", len(cf.Workers))
		}
		for _, w := range cf.Workers {
			if w.NodeID == "" || w.Region == "" {
				t.Fatalf("accepted worker %+v", w)
			}
		}
	})
}

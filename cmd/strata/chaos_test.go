package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestChaos_BadFlagsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
	}{
		{"unknown fault", []string{"chaos", "--data", dir, "--faults", "kill,flood"}},
		{"no fault", []string{"chaos", "--data", dir, "--faults", ","}},
		{"zero duration", []string{"chaos", "--data", dir, "--duration", "0s"}},
		{"duration over an hour", []string{"chaos", "--data", dir, "--duration", "2h"}},
		{"stray argument", []string{"chaos", "--data", dir, "extra"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(tt.args); got != exitUsage {
				t.Fatalf("exit %d, want %d", got, exitUsage)
			}
		})
	}
}

func TestChaos_NoRunningDevIsAnError(t *testing.T) {
	dir := t.TempDir()
	if got := run([]string{"chaos", "--data", dir, "--duration", "1s"}); got != exitError {
		t.Fatalf("no cluster.json: exit %d, want %d", got, exitError)
	}
	// A cluster file but no launcher behind the control socket.
	cf := `{"data_dir":"` + dir + `","token":"t","nodes":[{"node_id":"use1-gate1","role":"gate","region":"use1","api_addr":"127.0.118.1:7100","raft_addr":"127.0.118.1:7101","gossip_addr":"127.0.118.1:7102","data_dir":"x","pid":0}]}`
	if err := os.WriteFile(filepath.Join(dir, "cluster.json"), []byte(cf), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := run([]string{"chaos", "--data", dir, "--duration", "1s"}); got != exitError {
		t.Fatalf("no control socket: exit %d, want %d", got, exitError)
	}
}

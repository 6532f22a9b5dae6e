package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMembers(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	out, errOut, code := runCLI(t, "", "members", "--addr", f.addr())
	wantCode(t, code, exitOK, errOut)
	if req := f.only(t); req.Method != "GET" || req.Path != "/v1/cluster/members" {
		t.Errorf("request = %s %s", req.Method, req.Path)
	}
	if !strings.Contains(out, "use1-mgr1   manager  use1    dead") {
		t.Errorf("stdout:\n%s", out)
	}
}

func TestRaftPeers(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	out, errOut, code := runCLI(t, "", "raft", "peers", "--addr", f.addr())
	wantCode(t, code, exitOK, errOut)
	if req := f.only(t); req.Path != "/v1/cluster/raft" {
		t.Errorf("path = %s", req.Path)
	}
	for _, want := range []string{"use1-gate1", "Leader", "120/119", "use1-gate1*,euw1-gate1(nonvoter)", "applied=47 global=48 last=50"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

func TestRaftOperatorCommands(t *testing.T) {
	isolate(t)
	tests := []struct {
		name               string
		args               []string
		method, path, body string
	}{
		{"join", []string{"raft", "join", "euw1-gate2", "127.0.11.2:7000", "--non-voter"},
			"POST", "/v1/cluster/raft/join", `{"node_id":"euw1-gate2","raft_addr":"127.0.11.2:7000","non_voter":true}`},
		{"remove", []string{"raft", "remove", "euw1-gate2"}, "DELETE", "/v1/cluster/raft/peers/euw1-gate2", ""},
		{"transfer to", []string{"raft", "transfer-leadership", "--to", "euw1-gate1"},
			"POST", "/v1/cluster/raft/transfer-leadership", `{"to":"euw1-gate1"}`},
		{"transfer any", []string{"raft", "transfer-leadership"}, "POST", "/v1/cluster/raft/transfer-leadership", `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t)
			out, errOut, code := runCLI(t, "", append(tt.args, "--addr", f.addr())...)
			wantCode(t, code, exitOK, errOut)
			req := f.only(t)
			if req.Method != tt.method || req.Path != tt.path {
				t.Errorf("request = %s %s, want %s %s", req.Method, req.Path, tt.method, tt.path)
			}
			if tt.body != "" {
				sameJSON(t, req.Body, tt.body)
			}
			if !strings.Contains(out, "index   130") {
				t.Errorf("stdout:\n%s", out)
			}
		})
	}
	_, errOut, code := runCLI(t, "", "raft", "join", "only-one-arg", "--addr", "127.0.0.1:1")
	wantCode(t, code, exitUsage, errOut)
}

func TestRaftRecover_UsageAndAnEmptyNode(t *testing.T) {
	dir := isolate(t)
	_, errOut, code := runCLI(t, "", "raft", "recover", "--peers", "gate1=127.0.0.1:7002")
	wantCode(t, code, exitUsage, errOut)
	_, errOut, code = runCLI(t, "", "raft", "recover", "--config", "x.yaml", "--peers", "gate1")
	wantCode(t, code, exitUsage, errOut)
	path := filepath.Join(dir, "gate1.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(baseYAML, "/tmp/strata-gate1", filepath.Join(dir, "data"), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	// A node that never ran has no Raft state to recover.
	_, errOut, code = runCLI(t, "", "raft", "recover", "--config", path, "--peers", "gate1=127.0.0.1:7002")
	wantCode(t, code, exitError, errOut)
	// The servers must include the node.
	_, errOut, code = runCLI(t, "", "raft", "recover", "--config", path, "--peers", "gate9=127.0.0.1:7002")
	wantCode(t, code, exitError, errOut)
	if !strings.Contains(errOut, "must include this node") {
		t.Fatalf("stderr: %s", errOut)
	}
}

package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/transport/api"
)

func TestAddr_FromEnvironment(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	t.Setenv(envAddr, " "+f.addr()+" ,")
	t.Setenv(envToken, "env-token")
	_, errOut, code := runCLI(t, "", "members")
	wantCode(t, code, exitOK, errOut)
	if a := f.only(t).Header.Get("Authorization"); a != "Bearer env-token" {
		t.Fatalf("Authorization = %q", a)
	}
}

func TestAddr_FromDevClusterFile(t *testing.T) {
	dir := isolate(t)
	gate, mgr := newFakeAPI(t), newFakeAPI(t)
	cf := api.ClusterFile{DataDir: ".strata-dev", Token: "file-token-0123456789", Nodes: []api.ClusterNode{
		{NodeID: "use1-mgr1", Role: "manager", Region: "use1", APIAddr: mgr.addr()},
		{NodeID: "use1-gate1", Role: "gate", Region: "use1", APIAddr: gate.addr()},
	}}
	b, _ := json.Marshal(cf)
	if err := os.MkdirAll(filepath.Join(dir, ".strata-dev"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, devClusterFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "", "job", "status", testJobID)
	wantCode(t, code, exitOK, errOut)
	if a := gate.only(t).Header.Get("Authorization"); a != "Bearer file-token-0123456789" {
		t.Errorf("Authorization = %q, want the file's token", a)
	}
	if len(mgr.requests()) != 0 {
		t.Error("the manager was asked before the gate")
	}

	// --token wins over the file's token.
	_, errOut, code = runCLI(t, "", "members", "--token", "flag-token")
	wantCode(t, code, exitOK, errOut)
	reqs := gate.requests()
	if a := reqs[len(reqs)-1].Header.Get("Authorization"); a != "Bearer flag-token" {
		t.Errorf("Authorization = %q, want the flag's token", a)
	}
}

func TestAddr_MissingIsUsageWithHint(t *testing.T) {
	isolate(t)
	_, errOut, code := runCLI(t, "", "job", "list")
	wantCode(t, code, exitUsage, errOut)
	for _, want := range []string{"--addr", envAddr, devClusterFile} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr = %q, want it to mention %s", errOut, want)
		}
	}
}

func TestAddr_FailsOverToALiveNode(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	_, errOut, code := runCLI(t, "", "raft", "peers", "--addr", dead+","+f.addr())
	wantCode(t, code, exitOK, errOut)

	_, errOut, code = runCLI(t, "", "raft", "peers", "--addr", dead)
	wantCode(t, code, exitError, errOut)
	if !strings.Contains(errOut, "no node answered") || !strings.Contains(errOut, dead) {
		t.Errorf("stderr = %q, want it to name the unreachable address", errOut)
	}
}

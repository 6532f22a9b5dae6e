package main

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/test/bench"
	"github.com/strata-ledger/strata/transport/tlsutil"
)

// The token's flag has no default from the environment: --help would
// print it.
func TestBench_HelpDoesNotPrintTheToken(t *testing.T) {
	t.Setenv(envToken, "secret-token-0123456789")
	out, _, code := runCLI(t, "", "bench", "--help")
	if code != exitOK || strings.Contains(out, "secret-token") {
		t.Fatalf("exit %d, help:\n%s", code, out)
	}
}

func TestBenchAddrs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cluster.json")
	if err := os.WriteFile(file, []byte(`{"token":"file-token","nodes":[
		{"node_id":"use1-gate1","role":"gate","region":"use1","api_addr":"127.0.30.1:7100"},
		{"node_id":"use1-mgr1","role":"manager","region":"use1","api_addr":"127.0.30.2:7100"},
		{"node_id":"euw1-mgr1","role":"manager","region":"euw1","api_addr":"127.0.31.2:7100"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, env, token, addrs, file, tier, target string
		wantAddrs                                   []string
		wantToken, wantErr                          string
	}{
		{name: "addr list", addrs: " a:1, b:2,,c:3", env: "env-token", wantAddrs: []string{"a:1", "b:2", "c:3"}, wantToken: "env-token"},
		{name: "flag token wins", addrs: "a:1", env: "env-token", token: "flag-token", wantAddrs: []string{"a:1"}, wantToken: "flag-token"},
		{name: "file, regional", file: file, tier: bench.TierRegional, wantAddrs: []string{"127.0.30.2:7100"}, wantToken: "file-token"},
		{name: "file, global, env token", file: file, tier: bench.TierGlobal, env: "env-token", wantAddrs: []string{"127.0.30.1:7100"}, wantToken: "env-token"},
		{name: "etcd needs an address", file: file, target: bench.TargetEtcd, wantErr: "no etcd address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envToken, tt.env)
			t.Setenv(envCAFile, "")
			cfg := bench.Config{Token: tt.token, Tier: tt.tier, Region: "use1", Target: tt.target}
			err := benchAddrs(&cfg, tt.addrs, tt.file, benchTLSFlags{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(cfg.Addrs, tt.wantAddrs) || cfg.Token != tt.wantToken {
				t.Fatalf("addrs %v token %q (%v), want %v %q", cfg.Addrs, cfg.Token, err, tt.wantAddrs, tt.wantToken)
			}
		})
	}
}

// TestBenchAddrs_TLS: the cluster file's tls member, --ca-file or
// STRATA_CA_FILE make the bench talk TLS, to https addresses.
func TestBenchAddrs_TLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlsutil.NewCA(rand.Reader, time.Now(), "")
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := tlsutil.WritePair(caFile, filepath.Join(dir, "ca-key.pem"), ca, false); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "cluster.json")
	if err := os.WriteFile(file, []byte(`{"token":"file-token","tls":{"ca_file":"`+caFile+`"},"nodes":[
		{"node_id":"use1-gate1","role":"gate","region":"use1","api_addr":"127.0.30.1:7100"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, env, addrs, file, target string
		flags                          benchTLSFlags
		wantAddrs                      []string
		wantTLS                        bool
		wantErr                        string
	}{
		{name: "cluster file with tls", file: file, wantAddrs: []string{"https://127.0.30.1:7100"}, wantTLS: true},
		{name: "--ca-file", addrs: "a:1,http://b:2", flags: benchTLSFlags{caFile: caFile}, wantAddrs: []string{"https://a:1", "http://b:2"}, wantTLS: true},
		{name: "STRATA_CA_FILE", addrs: "a:1", env: caFile, wantAddrs: []string{"https://a:1"}, wantTLS: true},
		{name: "no ca", addrs: "a:1", wantAddrs: []string{"a:1"}},
		{name: "a missing ca", addrs: "a:1", flags: benchTLSFlags{caFile: caFile + ".missing"}, wantErr: "tls ca"},
		{name: "half a client certificate", addrs: "a:1", flags: benchTLSFlags{caFile: caFile, certFile: caFile}, wantErr: "both"},
		{name: "etcd has no tls", addrs: "a:1", target: bench.TargetEtcd, flags: benchTLSFlags{caFile: caFile}, wantErr: "etcd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envToken, "")
			t.Setenv(envCAFile, tt.env)
			cfg := bench.Config{Tier: bench.TierGlobal, Region: "use1", Target: tt.target}
			err := benchAddrs(&cfg, tt.addrs, tt.file, tt.flags)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(cfg.Addrs, tt.wantAddrs) || (cfg.TLS != nil) != tt.wantTLS {
				t.Fatalf("addrs %v tls %v (%v), want %v tls %v", cfg.Addrs, cfg.TLS != nil, err, tt.wantAddrs, tt.wantTLS)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/strata-ledger/strata/cluster/devcluster"
)

func TestDev_BadOptionsAreUsageErrorsAndCreateNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	tests := []struct {
		name string
		args []string
	}{
		{"subnet past 255", []string{"dev", "--data", dir, "--subnet", "300"}},
		{"bad log level", []string{"dev", "--data", dir, "--log-level", "loud"}},
		{"negative wan latency", []string{"dev", "--data", dir, "--wan-latency", "-1s"}},
		{"stray argument", []string{"dev", "--data", dir, "extra"}},
		{"negative workers", []string{"dev", "--data", dir, "--workers", "-1"}},
		{"too many workers", []string{"dev", "--data", dir, "--workers", "1000"}},
		{"zero worker capacity", []string{"dev", "--data", dir, "--worker-capacity", "0"}},
		{"worker capacity over the limit", []string{"dev", "--data", dir, "--worker-capacity", "1001"}},
		{"wal segment below the node minimum", []string{"dev", "--data", dir, "--wal-segment-bytes", "65536"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(tt.args); got != exitUsage {
				t.Fatalf("exit %d, want %d", got, exitUsage)
			}
			if _, err := os.Stat(dir); err == nil {
				t.Fatalf("%s was created", dir)
			}
		})
	}
}

func TestDev_WorkersFlags(t *testing.T) {
	tests := []struct {
		name              string
		args              []string
		workers, capacity int
	}{
		{"defaults: enough workers for the example job", nil, 2, devcluster.DefaultWorkerCapacity},
		{"set", []string{"--workers", "3", "--worker-capacity", "5"}, 3, 5},
		{"none", []string{"--workers", "0"}, 0, devcluster.DefaultWorkerCapacity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f devFlags
			fs := pflag.NewFlagSet("dev", pflag.ContinueOnError)
			addDevFlags(fs, &f)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			o := f.options()
			if o.WorkersPerRegion != tt.workers || o.WorkerCapacity != tt.capacity {
				t.Fatalf("options: %d workers of capacity %d, want %d of %d", o.WorkersPerRegion, o.WorkerCapacity, tt.workers, tt.capacity)
			}
			o.DataDir, o.Token, o.ClusterToken = t.TempDir(), testToken, testToken
			ws, err := devcluster.PlanWorkers(o)
			if err != nil || len(ws) != 3*tt.workers {
				t.Fatalf("plan: %d workers (%v), want %d per region", len(ws), err, tt.workers)
			}
		})
	}
}

// TestDev_TLSPrintsHTTPSAndTheCA: --tls reaches the options, and the
// banner of a TLS cluster gives https addresses and the CA to export,
// never the CA key.
func TestDev_TLSPrintsHTTPSAndTheCA(t *testing.T) {
	var f devFlags
	fs := pflag.NewFlagSet("dev", pflag.ContinueOnError)
	addDevFlags(fs, &f)
	if err := fs.Parse([]string{"--tls", "--subnet", "107"}); err != nil {
		t.Fatal(err)
	}
	o := f.options()
	if !o.TLS {
		t.Fatal("--tls did not set Options.TLS")
	}
	o.DataDir = t.TempDir()
	c, err := devcluster.New(devcluster.Config{Options: o, Binary: "strata-not-run"})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	printDevCluster(&out, c)
	ca := filepath.Join(o.DataDir, "tls", "ca.pem")
	for _, want := range []string{"https://127.0.107.1:7100", "export STRATA_ADDR=https://127.0.107.1:7100,https://127.0.108.1:7100,https://127.0.109.1:7100",
		"export " + envCAFile + "=" + ca, "tls: CA " + ca} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "http://") || strings.Contains(out.String(), "ca-key") {
		t.Errorf("banner has a plain address or names the CA key:\n%s", out.String())
	}
}

package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/devcluster"
	"github.com/strata-ledger/strata/test/bench"
)

// asCLIEnv makes this test binary act as the strata binary: the end-to-end
// test's dev cluster runs its agents from it, so no separate build is
// needed.
const asCLIEnv = "STRATA_TEST_BINARY_IS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLIEnv) == "1" {
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func TestBenchProgress_BadFlagsAreUsageErrors(t *testing.T) {
	isolate(t)
	base := []string{"bench", "progress", "--addr", "127.0.0.1:1", "--token", testToken}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"tcp and http", append(base, "--tcp", "--http"), "choose one"},
		{"no workers", append(base, "--workers", "0"), "workers 0"},
		{"too many workers", append(base, "--workers", "257"), "workers 257"},
		{"fewer workflows than workers", append(base, "--workers", "8", "--workflows", "4"), "every worker needs at least one workflow"},
		{"too many workflows per worker", append(base, "--workers", "1", "--workflows", "1001"), "at most 1000"},
		{"too many workflows", append(base, "--workers", "20", "--workflows", "10001"), "workflows 10001"},
		{"loss of one", append(base, "--loss", "1"), "loss 1"},
		{"negative dup", append(base, "--dup", "-0.1"), "dup -0.1"},
		{"loss over http", append(base, "--http", "--loss", "0.1"), "HTTP progress call has none"},
		{"reorder over http", append(base, "--http", "--reorder"), "HTTP progress call has none"},
		{"negative rate", append(base, "--rate", "-5"), "rate -5"},
		{"negative duration", append(base, "--duration", "-1s"), "duration"},
		{"bad region", append(base, "--region", "US-East"), "region"},
		{"bad output", append(base, "-o", "yaml"), `-o "yaml"`},
		{"stray argument", append(base, "extra"), "unknown command"},
		{"no address", []string{"bench", "progress"}, "no address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, "", tt.args...)
			wantCode(t, code, exitUsage, errOut)
			if !strings.Contains(errOut, tt.want) {
				t.Fatalf("stderr lacks %q:\n%s", tt.want, errOut)
			}
		})
	}
}

func TestBenchProgress_FlagsMakeTheConfig(t *testing.T) {
	isolate(t)
	t.Setenv(envToken, "env-token")
	f := benchProgressFlags{addrs: "a:1,b:2", tcp: true, output: outputJSON,
		cfg: bench.DataPlaneConfig{Region: "use1", Workers: 2, Workflows: 10, Loss: 0.05}}
	cfg, err := f.config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Transport != bench.TransportTCP || strings.Join(cfg.Addrs, ",") != "a:1,b:2" || cfg.Token != "env-token" || cfg.Loss != 0.05 {
		t.Fatalf("config %+v", cfg)
	}
}

func TestBenchProgress_Outcome(t *testing.T) {
	tests := []struct {
		name string
		res  bench.DataPlaneResult
		want string
	}{
		{"exact", bench.DataPlaneResult{Folded: 10, Exact: true, ExactGlobal: true}, ""},
		{"nothing folded", bench.DataPlaneResult{Exact: true}, "folded no update"},
		{"global behind", bench.DataPlaneResult{Folded: 10, Exact: true}, "global ledger"},
		{"not exact", bench.DataPlaneResult{Folded: 10, Workflows: 4, Mismatched: 1}, "1 of 4 workflows differ"},
	}
	for _, tt := range tests {
		err := benchProgressOutcome(&tt.res)
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// The bench against a real cluster (one gate, one manager, on
// 127.0.103.x): simulated workers register, are leased a job's
// workflows, fire frames over UDP with injected loss, duplicates and
// reordering, and the regional ledger ends with exactly the last counters.
func TestBenchProgress_AgainstARealCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	isolate(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := devcluster.New(devcluster.Config{Binary: self, Env: []string{asCLIEnv + "=1"},
		Options: devcluster.Options{DataDir: t.TempDir(), Regions: []string{"use1"}, ManagersPerRegion: 1, GatesPerRegion: 1,
			SubnetBase: 103, LogLevel: "warn"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.StopAll(); err != nil {
			t.Logf("stop: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "", "bench", "progress", "--cluster-file", c.ClusterFilePath(), "--region", "use1",
		"--workers", "2", "--workflows", "40", "--rate", "20000", "--duration", "1s",
		"--loss", "0.05", "--dup", "0.05", "--reorder", "--settle-timeout", "30s", "-o", "json")
	wantCode(t, code, exitOK, errOut)
	var res bench.DataPlaneResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if !res.Exact || !res.ExactGlobal || res.Folded == 0 || res.Workflows != 40 || res.Sent == 0 {
		t.Fatalf("exact %v (global %v), folded %d, workflows %d, sent %d:\n%s", res.Exact, res.ExactGlobal, res.Folded, res.Workflows, res.Sent, out)
	}
	if res.P99MsToLocal == nil || *res.P99MsToLocal <= 0 {
		t.Fatalf("no fold-to-LOCAL latency observed:\n%s", out)
	}
}

package chaos

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/devcluster"
)

// The real run: a `strata dev` cluster (12 node processes, 6 workers) on
// 127.0.114-116.x, the built strata binary, every fault kind, then the
// checks. It takes the fault phase plus a minute or two, so it runs only
// when STRATA_CHAOS_DURATION is set (`make chaos-dev CHAOS_DURATION=45s`);
// STRATA_CHAOS_SEED replays a schedule.
const (
	envChaosDuration = "STRATA_CHAOS_DURATION"
	envChaosSeed     = "STRATA_CHAOS_SEED"
	subnetChaosRun   = 114
	clusterStartWait = 2 * time.Minute
)

func TestRun_DevClusterUnderEveryFaultLosesNothing(t *testing.T) {
	d := os.Getenv(envChaosDuration)
	if d == "" {
		t.Skipf("set %s (e.g. 45s) to run a real chaos run against a dev cluster", envChaosDuration)
	}
	duration, err := time.ParseDuration(d)
	if err != nil || duration <= 0 || duration > MaxDuration {
		t.Fatalf("%s=%q: want a duration in (0, %v]", envChaosDuration, d, MaxDuration)
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(envChaosSeed); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", envChaosSeed, s, err)
		}
	}
	t.Logf("seed %d (%s=%d replays the faults)", seed, envChaosSeed, seed)

	// A short directory: the control socket's path must fit sun_path.
	dir, err := os.MkdirTemp("", "chaos-")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "strata")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/strata")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build strata: %v\n%s", err, out)
	}
	c, err := devcluster.New(devcluster.Config{Binary: bin, Options: devcluster.Options{
		DataDir: filepath.Join(dir, "dev"), SubnetBase: subnetChaosRun, EnableFaultInjection: true, LogLevel: "info",
		WorkersPerRegion: 2}}) // as strata dev: jobs run to completion
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.StopAll(); err != nil {
			t.Logf("stop: %v", err)
		}
		if t.Failed() {
			t.Logf("data and logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	ctx, cancel := context.WithTimeout(context.Background(), clusterStartWait)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	srv, err := devcluster.ServeControl(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cc, err := devcluster.DialControl(ctx, c.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	res, err := Run(context.Background(), Config{Seed: seed, Duration: duration, Kinds: Kinds, Cluster: c.ClusterFile(),
		Control: ControlOf(cc), Settle: 2 * time.Minute, JobTimeout: time.Minute, Log: &log,
		// Shorter holds and gaps than the CLI's, so a short run sees
		// every kind.
		Schedule: ScheduleConfig{MinHold: 2 * time.Second, MaxHold: 5 * time.Second, MinGap: time.Second, MaxGap: 3 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	var report strings.Builder
	res.WriteText(&report)
	t.Logf("%s%s", log.String(), report.String())
	if res.Anomalous() {
		t.Fatalf("%d anomalies (seed %d)", len(res.Verdict.Anomalies), seed)
	}
	if res.HealErr != "" {
		t.Fatalf("the cluster did not heal: %s", res.HealErr)
	}
	if len(res.Faults) == 0 || res.Verdict.Acked == 0 || res.Verdict.JobsTerminal != res.Verdict.Acked {
		t.Fatalf("a run that tested nothing: %d faults, %d jobs acknowledged, %d terminal",
			len(res.Faults), res.Verdict.Acked, res.Verdict.JobsTerminal)
	}
	if res.Verdict.EndStates["COMPLETED"] == 0 {
		t.Fatalf("no job completed (end states %v): the workers did not run", res.Verdict.EndStates)
	}
	for _, f := range res.Faults {
		if f.Err != "" {
			t.Errorf("fault %v: %s", f.Fault, f.Err)
		}
	}
}

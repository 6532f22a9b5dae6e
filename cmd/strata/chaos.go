package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-ledger/strata/cluster/chaos"
	"github.com/strata-ledger/strata/cluster/devcluster"
	"github.com/strata-ledger/strata/transport/api"
)

type chaosFlags struct {
	dataDir    string
	duration   time.Duration
	faults     string
	seed       uint64
	clients    int
	rate       float64
	maxJobs    int
	jobTimeout time.Duration
	settle     time.Duration
	jsonPath   string
}

func newChaosCmd() *cobra.Command {
	var f chaosFlags
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Inject faults into a running `strata dev` cluster under load and check nothing acknowledged was lost",
		Long: `chaos drives nemeses against the cluster of a running ` + "`strata dev --enable-fault-injection`" + `
(found by --data): SIGKILL and restart, SIGSTOP and SIGCONT (through dev's
control socket), network partitions and clock skew (through each node's
fault endpoint), one fault at a time on a node drawn from the seed. Meanwhile
a workload submits jobs (GLOBAL, with idempotency keys), cancels some and
reads them with consistency=strong. At the end it heals every fault, repeats
the submits whose outcome it never learnt, waits for every acknowledged job
to end, and checks: every acknowledged job exists in the global ledger and
reached a terminal state, and each job's strong reads and writes are
linearizable (porcupine). It prints a report and exits 1 on any anomaly.
The seed (printed) determines the faults, not the workload's interleaving.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runChaos(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.Flags().Changed("seed"), f)
		},
	}
	addChaosFlags(cmd.Flags(), &f)
	return cmd
}

func addChaosFlags(fs *pflag.FlagSet, f *chaosFlags) {
	fs.StringVar(&f.dataDir, "data", "./.strata-dev", "data directory of the running `strata dev`")
	fs.DurationVar(&f.duration, "duration", time.Minute, fmt.Sprintf("how long to inject faults and run the workload (at most %v)", chaos.MaxDuration))
	fs.StringVar(&f.faults, "faults", "kill,pause,partition,skew", "fault kinds: kill, pause, partition, skew")
	fs.Uint64Var(&f.seed, "seed", 0, "seed of the fault schedule (default: from the clock, printed)")
	fs.IntVar(&f.clients, "clients", chaos.DefaultClients, fmt.Sprintf("concurrent workload clients (at most %d)", chaos.MaxClients))
	fs.Float64Var(&f.rate, "rate", chaos.DefaultRate, fmt.Sprintf("workload operations per second, all clients together (at most %d)", chaos.MaxRate))
	fs.IntVar(&f.maxJobs, "max-jobs", chaos.DefaultMaxJobs, fmt.Sprintf("jobs the workload submits at most (at most %d)", chaos.MaxJobs))
	fs.DurationVar(&f.jobTimeout, "job-timeout", chaos.DefaultJobTimeout, "each job's timeout")
	fs.DurationVar(&f.settle, "settle", chaos.DefaultSettle, fmt.Sprintf("bound of the end phase: heal, resolve, wait for every job to end (at most %v)", chaos.MaxSettle))
	fs.StringVar(&f.jsonPath, "json", "", "also write the report, with the whole history, as JSON to this file")
}

// anomaliesFound makes chaos exit 1 after printing its report.
type anomaliesFound int

func (a anomaliesFound) Error() string { return fmt.Sprintf("chaos: %d anomalies", int(a)) }
func (a anomaliesFound) ExitCode() int { return exitError }

func runChaos(ctx context.Context, out, errOut io.Writer, seedGiven bool, f chaosFlags) error {
	kinds, err := chaos.ParseKinds(f.faults)
	if err != nil {
		return usageError{err}
	}
	if f.duration <= 0 || f.duration > chaos.MaxDuration {
		return usageError{fmt.Errorf("--duration %v: want (0, %v]", f.duration, chaos.MaxDuration)}
	}
	if !seedGiven {
		f.seed = uint64(time.Now().UnixNano())
	}
	cf, err := api.LoadClusterFile(filepath.Join(f.dataDir, "cluster.json"))
	if err != nil {
		return fmt.Errorf("chaos: %w (is `strata dev --data %s` running?)", err, f.dataDir)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { // the first Ctrl-C ends the fault phase; a second one ends chaos at once
		<-ctx.Done()
		stop()
	}()
	cc, err := devcluster.DialControl(ctx, f.dataDir)
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	cfg := chaos.Config{
		Seed: f.seed, Duration: f.duration, Kinds: kinds, Cluster: *cf, Control: chaos.ControlOf(cc),
		Clients: f.clients, Rate: f.rate, MaxJobs: f.maxJobs, JobTimeout: f.jobTimeout, Settle: f.settle, Log: errOut,
	}
	// Ctrl-C ends the fault phase early; the end phase still heals and checks.
	res, err := chaos.Run(ctx, cfg)
	if errors.Is(err, chaos.ErrBadConfig) {
		return usageError{err}
	}
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	res.WriteText(out)
	if f.jsonPath != "" {
		if err := writeChaosJSON(f.jsonPath, res); err != nil {
			return err
		}
	}
	if res.Anomalous() {
		return anomaliesFound(len(res.Verdict.Anomalies))
	}
	return nil
}

func writeChaosJSON(path string, res *chaos.Result) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("chaos: write report: %w", err)
	}
	return nil
}

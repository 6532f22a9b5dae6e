package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/test/bench"
)

// benchProgressFlags are `strata bench progress`'s own flags; the
// addressing ones are `strata bench`'s (benchAddrs).
type benchProgressFlags struct {
	cfg         bench.DataPlaneConfig
	addrs       string
	clusterFile string
	tcp, http   bool
	output      string
	noProgress  bool
	tls         benchTLSFlags
}

func newBenchProgressCmd() *cobra.Command {
	var f benchProgressFlags
	cmd := &cobra.Command{
		Use:   "progress",
		Short: "Fire progress frames at a region's managers from simulated workers; report updates/s, loss and exactness",
		Long: `Register --workers simulated workers with the managers of --region (as
` + "`strata worker`" + ` registers), submit a job of --workflows workflows there and,
once the region has leased them to the workers, send every workflow's
cumulative counters for --duration: as data-plane frames over UDP (the
default) or TCP (--tcp) to the data_plane_addr the registration names, or
as HTTP progress calls at durability local (--http). --rate caps the
updates per second over all workers (default: as fast as they can).
--loss and --dup drop or duplicate frames before they are sent, --reorder
sends half of each round's frames after the next round's.

At the end it waits (at most --settle-timeout, resending the last counters
every 500 ms as a worker does) until the regional ledger holds exactly the
last counters sent ("exact"), then cancels the job and deregisters the
workers. It reads the managers' /metrics before and after: updates/s
folded, drops, CPU per 1,000 updates, p99 from fold to LOCAL; and the
machine's UDP InErrors (/proc/net/snmp) as kernel drops.

Run it against a region without other free workers (strata dev --workers
0), or some workflows go to them (reported as workflows_elsewhere). The
token must allow registering any worker id: the cluster file's does.
Exits 1 when the ledger is not exact or nothing was folded.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config()
			if err != nil {
				return err
			}
			if !f.noProgress && isTerminal(os.Stderr) {
				cfg.Progress = cmd.ErrOrStderr()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := bench.RunDataPlane(ctx, cfg)
			if err != nil {
				return err
			}
			if err := writeBenchProgressResult(cmd.OutOrStdout(), res, f.output); err != nil {
				return err
			}
			return benchProgressOutcome(res)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.addrs, "addr", "", "comma-separated API addresses of the region's managers (host:port or URL)")
	fs.StringVar(&f.clusterFile, "cluster-file", "", "take the managers of --region and the token from the cluster.json of strata dev (default ./"+devClusterFile+" when no --addr)")
	fs.StringVar(&f.cfg.Token, "token", "", "API bearer token (env "+envToken+"; default: the cluster file's)")
	fs.StringVar(&f.cfg.Region, "region", bench.DefaultRegion, "region whose managers take the progress")
	fs.StringVar(&f.cfg.Tenant, "tenant", bench.DefaultTenant, "tenant of the job")
	fs.IntVar(&f.cfg.Workers, "workers", bench.DefaultDataPlaneWorkers, fmt.Sprintf("simulated workers, 1..%d", bench.MaxDataPlaneWorkers))
	fs.IntVar(&f.cfg.Workflows, "workflows", bench.DefaultDataPlaneWorkflows, fmt.Sprintf("workflows of the job, shared by the workers, up to %d", bench.MaxDataPlaneWorkflows))
	fs.Float64Var(&f.cfg.Rate, "rate", 0, "updates per second over all workers (0: as fast as possible)")
	fs.DurationVar(&f.cfg.Duration, "duration", bench.DefaultDuration, "how long the load lasts")
	fs.Float64Var(&f.cfg.Loss, "loss", 0, "probability a frame is dropped before it is sent, in [0, 1)")
	fs.Float64Var(&f.cfg.Dup, "dup", 0, "probability a frame is sent twice, in [0, 1)")
	fs.BoolVar(&f.cfg.Reorder, "reorder", false, "send a random half of each round's frames after the next round's")
	fs.BoolVar(&f.tcp, "tcp", false, "send frames over TCP instead of UDP")
	fs.BoolVar(&f.http, "http", false, "send progress as HTTP calls (POST /v1/workers/{id}/progress) instead of frames")
	fs.DurationVar(&f.cfg.SettleTimeout, "settle-timeout", bench.DefaultSettleTimeout, "how long to wait at the end for the ledger to hold the last counters")
	fs.DurationVar(&f.cfg.LeaseTimeout, "lease-timeout", bench.DefaultLeaseTimeout, "how long to wait for the job's workflows to be leased")
	fs.DurationVar(&f.cfg.RequestTimeout, "timeout", bench.DefaultRequestTimeout, "bound on one API call")
	fs.DurationVar(&f.cfg.WaitReady, "wait-ready", 0, "first wait up to this long for every manager to pass its health check (0: don't)")
	fs.Uint64Var(&f.cfg.Seed, "seed", 0, "seed of the loss, dup and reorder draws (0: random)")
	fs.StringVarP(&f.output, "output", "o", outputTable, "table or json")
	fs.BoolVar(&f.noProgress, "no-progress", false, "draw no progress bar (none is drawn unless stderr is a terminal)")
	f.tls.add(fs)
	return cmd
}

// config checks the flags and resolves the managers and token; every bad
// value is a usage error, reported before anything is sent.
func (f *benchProgressFlags) config() (bench.DataPlaneConfig, error) {
	cfg := f.cfg
	if f.output != outputTable && f.output != outputJSON {
		return cfg, usageError{fmt.Errorf("-o %q: want %s or %s", f.output, outputTable, outputJSON)}
	}
	switch {
	case cfg.Workers < 1 || cfg.Workflows < 1: // 0 would be the library's default
		return cfg, usageError{fmt.Errorf("--workers %d, --workflows %d: want at least 1 of each", cfg.Workers, cfg.Workflows)}
	case f.tcp && f.http:
		return cfg, usageError{errors.New("--tcp and --http: choose one")}
	case f.tcp:
		cfg.Transport = bench.TransportTCP
	case f.http:
		cfg.Transport = bench.TransportHTTP
	default:
		cfg.Transport = bench.TransportUDP
	}
	bc := bench.Config{Token: cfg.Token, Tier: bench.TierRegional, Region: cfg.Region}
	if err := benchAddrs(&bc, f.addrs, f.clusterFile, f.tls); err != nil {
		return cfg, usageError{err}
	}
	cfg.Addrs, cfg.Token, cfg.TLS = bc.Addrs, bc.Token, bc.TLS
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{err}
	}
	return cfg, nil
}

func writeBenchProgressResult(w io.Writer, res *bench.DataPlaneResult, output string) error {
	if output == outputJSON {
		return res.WriteJSON(w)
	}
	return res.WriteTable(w)
}

// benchProgressOutcome is the run's error after its result is printed:
// nothing folded, or a ledger that does not hold the counters sent.
func benchProgressOutcome(res *bench.DataPlaneResult) error {
	switch {
	case res.Folded == 0:
		return errors.New("bench progress: the managers folded no update")
	case !res.Exact:
		return fmt.Errorf("bench progress: the ledger is not exact: %d of %d workflows differ from the last counters sent", res.Mismatched, res.Workflows)
	case !res.ExactGlobal:
		return errors.New("bench progress: the global ledger's totals of the job differ from the regional ledger's")
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/cluster/tracing"
	"github.com/strata-ledger/strata/cluster/worker"
	"github.com/strata-ledger/strata/transport/api"
)

// defaultWorkerCapacity is how many workflows a worker runs at once unless
// told otherwise.
const defaultWorkerCapacity = 8

type workerFlags struct {
	managers []string
	region   string
	capacity uint32
	id       string
	token    string
	logLevel string
	progress string
	// failFirst, for demonstrations of retries (issue 18): fail the first
	// N attempts of every workflow.
	failFirst uint32
	otlp      string // OTLP/HTTP traces endpoint; empty: no spans
}

// envOTLPTraces is OpenTelemetry's standard variable for the traces
// endpoint, the default of --otlp-endpoint.
const envOTLPTraces = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"

func newWorkerCmd() *cobra.Command {
	var f workerFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a reference worker: lease workflows from a region's managers and run their synthetic load",
		Long: `worker registers with the managers of --region, leases up to --capacity
workflows at a time and runs each as a synthetic load drawn from its spec
(duration, rate of simulated requests, failure ratio), reporting progress
(over the managers' UDP data plane when they offer one; --progress tcp or
http otherwise) and the workflow's end. It stops a workflow as soon as the managers say so
or its lease moves on, and stops every workflow when it cannot heartbeat.

--manager defaults to the managers of --region in ./` + devClusterFile + `, and
the token to --token, then ` + envToken + `, then that file's token. The token
needs scope worker bound to --id (strata dev gives each worker its own), or
the operator scope.

SIGTERM or Ctrl-C stops every workflow, deregisters (its leases go back to
the region at once) and exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if f.otlp != "" { // validated by config
				tr, err := tracing.New(tracing.Config{OTLPEndpoint: f.otlp}, "strata-worker", f.id)
				if err != nil {
					return err
				}
				defer tr.Close()
				cfg.Trace = tracing.WorkerTrace(tr)
			}
			return runWorker(cmd.Context(), cfg)
		},
	}
	fs := cmd.Flags()
	fs.StringSliceVar(&f.managers, "manager", nil,
		"API address of a manager of the region, host:port; repeat or comma-separate for failover (default: the region's managers in ./"+devClusterFile+")")
	fs.StringVar(&f.region, "region", "", "the worker's region, e.g. use1 (required)")
	fs.Uint32Var(&f.capacity, "capacity", defaultWorkerCapacity, fmt.Sprintf("workflows run at once, 1..%d", worker.MaxCapacity))
	fs.StringVar(&f.id, "id", "", "worker id, e.g. w-use1-1 (default: one the manager chooses)")
	fs.StringVar(&f.token, "token", "", "bearer token (env "+envToken+"; default: the token of ./"+devClusterFile+")")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.otlp, "otlp-endpoint", os.Getenv(envOTLPTraces),
		"OTLP/HTTP traces URL, e.g. http://collector:4318/v1/traces: each workflow's run is a span of its job's trace (env "+envOTLPTraces+"; default: no tracing)")
	fs.StringVar(&f.progress, "progress", worker.ProgressUDP,
		"how progress is sent: udp (the data plane; http when the manager offers none), tcp (the data plane over TCP) or http")
	fs.Uint32Var(&f.failFirst, "fail-first-attempts", 0,
		"fault injection for demonstrations: fail the first N attempts of every workflow (with a retry policy, the retries then succeed)")
	return cmd
}

// config checks the flags and builds the runner's config; every bad value
// is a usage error, reported before anything is sent.
func (f *workerFlags) config(logOut io.Writer) (worker.Config, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return worker.Config{}, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)}
	}
	if f.region == "" {
		return worker.Config{}, usageError{errors.New("--region is required")}
	}
	addrs, token, ca, err := f.target()
	if err != nil {
		return worker.Config{}, err
	}
	cc := api.ClientConfig{Addrs: addrs, Token: token}
	if ca != "" { // a TLS cluster: managers are https
		if cc.TLS, err = api.ClientTLS(ca, "", ""); err != nil {
			return worker.Config{}, usageError{err}
		}
	}
	c, err := api.New(cc)
	if err != nil {
		return worker.Config{}, usageError{err}
	}
	cfg := worker.Config{Client: c, Region: f.region, Capacity: f.capacity, WorkerID: f.id, Progress: f.progress,
		Logger: slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: level}))}
	if f.failFirst > 0 {
		cfg.Fault = worker.FailFirstAttempts(f.failFirst)
	}
	if _, err := worker.New(cfg); err != nil { // the same checks Run's New makes
		return worker.Config{}, usageError{err}
	}
	if err := (tracing.Config{OTLPEndpoint: f.otlp}).Validate(); err != nil {
		return worker.Config{}, usageError{fmt.Errorf("--otlp-endpoint: %w", err)}
	}
	return cfg, nil
}

// target picks the managers, the token and the CA of a TLS cluster:
// flags, then the environment (token, CA), then the dev cluster file of
// the current directory (whose CA counts only if its managers are used).
func (f *workerFlags) target() (addrs []string, token, ca string, err error) {
	token = f.token
	if token == "" {
		token = os.Getenv(envToken)
	}
	ca = os.Getenv(envCAFile)
	addrs = splitList(f.managers)
	if len(addrs) > 0 && token != "" {
		return addrs, token, ca, nil
	}
	cf, err := api.LoadClusterFile(devClusterFile)
	switch {
	case errors.Is(err, fs.ErrNotExist) && len(addrs) > 0:
		return addrs, token, ca, nil // no token: the managers will say so
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", "", usageError{fmt.Errorf("no manager address: give --manager host:port (several comma-separated for failover), or run from the directory where `strata dev` wrote %s", devClusterFile)}
	case err != nil:
		return nil, "", "", err
	}
	if token == "" {
		token = cf.Token
	}
	if len(addrs) == 0 {
		if addrs = cf.ManagerAddrs(f.region); len(addrs) == 0 {
			return nil, "", "", usageError{fmt.Errorf("%s has no managers of region %q: give --manager host:port", devClusterFile, f.region)}
		}
		if ca == "" && cf.TLS != nil {
			ca = cf.TLS.CAFile
		}
	}
	return addrs, token, ca, nil
}

// runWorker runs the worker until SIGTERM, SIGINT or ctx ends.
func runWorker(ctx context.Context, cfg worker.Config) error {
	r, err := worker.New(cfg)
	if err != nil {
		return usageError{err}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	sig, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err = r.Run(sig)
	cfg.Logger.Info("stopped", "worker", r.WorkerID())
	return err
}

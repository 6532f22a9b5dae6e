package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-ledger/strata/test/bench"
	"github.com/strata-ledger/strata/transport/api"
)

func newBenchCmd() *cobra.Command {
	var (
		cfg         bench.Config
		addrs       string
		clusterFile string
		output      string
		noProgress  bool
		tlsFlags    benchTLSFlags
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Write to a Strata cluster (or etcd) from many clients; report throughput and latency",
		Long: `Run N concurrent clients, each sending its next write when the previous one
is acknowledged, for --duration or --requests, whichever ends first.

With --rate R, run an open loop instead: a write is due every 1/R seconds
(R over all clients) whatever the answers so far, and goes to the first
free one of --clients workers. Latency counts from the time a write was
due, so waiting for a worker counts; writes due while every worker was
busy are reported "late", writes still waiting at the end "unsent".

Strata, --tier global: one job submit per request (POST /v1/jobs), or with
--batch K > 1, K JobCreated events per POST /v1/events:batch, to gates.
Strata, --tier regional: K WorkflowDispatched events per POST /v1/events:batch,
to the managers of --region.
etcd (--target etcd): one put per request through etcd's JSON gateway
(POST /v3/kv/put).

--payload sizes each event's stored body (etcd: the value).

A TLS cluster: --ca-file (or ` + envCAFile + `, or the cluster file's tls)
names its CA; addresses become https.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != outputTable && output != outputJSON {
				return usageError{fmt.Errorf("-o %q: want %s or %s", output, outputTable, outputJSON)}
			}
			if err := benchAddrs(&cfg, addrs, clusterFile, tlsFlags); err != nil {
				return usageError{err}
			}
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			if !noProgress && isTerminal(os.Stderr) {
				cfg.Progress = cmd.ErrOrStderr()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := bench.Run(ctx, cfg)
			if err != nil {
				return err
			}
			if err := writeBenchResult(cmd.OutOrStdout(), res, output); err != nil {
				return err
			}
			if res.Requests == 0 {
				return errors.New("bench: no request succeeded")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addrs, "addr", "", "comma-separated node addresses (host:port or URL); clients are spread over them")
	f.StringVar(&clusterFile, "cluster-file", "", "take addresses and token from the cluster.json of strata dev: its gates, or the managers of --region (default ./"+devClusterFile+" when no --addr)")
	f.StringVar(&cfg.Token, "token", "", "API bearer token (env "+envToken+"; default: the cluster file's)")
	f.StringVar(&cfg.Target, "target", bench.TargetStrata, "system under test: strata or etcd")
	f.StringVar(&cfg.Tier, "tier", bench.TierGlobal, "strata: global (jobs, to gates) or regional (workflow events, to managers)")
	f.StringVar(&cfg.Durability, "durability", "", "strata: local, regional or global (default: the tier's own)")
	f.IntVar(&cfg.Clients, "clients", 1, "concurrent clients (with --rate: workers, the most requests in flight)")
	f.Float64Var(&cfg.Rate, "rate", 0, "open loop: requests per second over all clients, latency counted from each request's due time (0: closed loop)")
	f.Int64Var(&cfg.Requests, "requests", 0, "stop after this many requests in all (0: run for --duration)")
	f.DurationVar(&cfg.Duration, "duration", bench.DefaultDuration, "stop after this long")
	f.IntVar(&cfg.PayloadBytes, "payload", bench.DefaultPayloadBytes, "bytes per event body (etcd: per value)")
	f.IntVar(&cfg.Batch, "batch", 1, "events per request (strata)")
	f.StringVar(&cfg.Region, "region", bench.DefaultRegion, "region the workload writes to")
	f.StringVar(&cfg.Tenant, "tenant", bench.DefaultTenant, "tenant the workload writes as")
	f.DurationVar(&cfg.RequestTimeout, "timeout", bench.DefaultRequestTimeout, "bound on one request")
	f.DurationVar(&cfg.WaitReady, "wait-ready", 0, "first wait up to this long for every address to pass its health check (0: don't)")
	f.StringVarP(&output, "output", "o", outputTable, "table or json")
	f.BoolVar(&noProgress, "no-progress", false, "draw no progress bar (none is drawn unless stderr is a terminal)")
	tlsFlags.add(f)
	cmd.AddCommand(newBenchProgressCmd())
	return cmd
}

// benchTLSFlags name a TLS cluster's CA and an optional client
// certificate, as the API commands' --ca-file, --cert-file, --key-file.
type benchTLSFlags struct{ caFile, certFile, keyFile string }

func (t *benchTLSFlags) add(f *pflag.FlagSet) {
	f.StringVar(&t.caFile, "ca-file", "", "CA of a TLS cluster: addresses become https (env "+envCAFile+"; default: the cluster file's)")
	f.StringVar(&t.certFile, "cert-file", "", "client certificate to present (default: the cluster file's)")
	f.StringVar(&t.keyFile, "key-file", "", "client certificate's key")
}

// benchAddrs fills cfg.Addrs from --addr, else --cluster-file, else the
// dev cluster file of the current directory, and the token, if none was
// given, from $STRATA_TOKEN, else the cluster file. A TLS cluster (--ca-file,
// $STRATA_CA_FILE, or the tls member of the cluster file the addresses
// come from) sets cfg.TLS and makes every address without a scheme https.
func benchAddrs(cfg *bench.Config, addrs, clusterFile string, tf benchTLSFlags) error {
	if cfg.Token == "" { // read here, not as the flag's default: --help would print it
		cfg.Token = os.Getenv(envToken)
	}
	files := api.ClusterTLS{CAFile: tf.caFile, CertFile: tf.certFile, KeyFile: tf.keyFile}
	if files.CAFile == "" {
		files.CAFile = os.Getenv(envCAFile)
	}
	if addrs != "" {
		cfg.Addrs = splitList([]string{addrs})
		return benchTLS(cfg, files)
	}
	if cfg.Target == bench.TargetEtcd {
		return errors.New("no etcd address: give --addr host:port")
	}
	if clusterFile == "" {
		if _, err := os.Stat(devClusterFile); err != nil {
			return fmt.Errorf("no address: give --addr, --cluster-file, or run from the directory where `strata dev` wrote %s", devClusterFile)
		}
		clusterFile = devClusterFile
	}
	cf, err := api.LoadClusterFile(clusterFile)
	if err != nil {
		return err
	}
	if cfg.Addrs, err = bench.TierAddrs(cf, cfg.Tier, cfg.Region); err != nil {
		return fmt.Errorf("%s: %w", clusterFile, err)
	}
	if cfg.Token == "" {
		cfg.Token = cf.Token
	}
	if files.CAFile == "" && cf.TLS != nil {
		files = *cf.TLS
	}
	return benchTLS(cfg, files)
}

// benchTLS sets cfg.TLS from files (nothing without a CA) and gives every
// address without a scheme https://.
func benchTLS(cfg *bench.Config, files api.ClusterTLS) error {
	if files.CAFile == "" {
		return nil
	}
	if cfg.Target == bench.TargetEtcd {
		return errors.New("--ca-file: the etcd target is measured without TLS")
	}
	tc, err := api.ClientTLS(files.CAFile, files.CertFile, files.KeyFile)
	if err != nil {
		return err
	}
	cfg.TLS = tc
	for i, a := range cfg.Addrs {
		if !strings.Contains(a, "://") {
			cfg.Addrs[i] = "https://" + a
		}
	}
	return nil
}

func writeBenchResult(w io.Writer, res *bench.Result, output string) error {
	if output == outputJSON {
		return res.WriteJSON(w)
	}
	return res.WriteTable(w)
}

// isTerminal reports whether f is a character device (a terminal), where
// a progress bar's carriage returns make sense.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-ledger/strata/cluster"
	"github.com/strata-ledger/strata/cluster/devcluster"
)

// devReadyTimeout bounds how long `strata dev` waits for every node to
// report ready: gossip discovery, bootstrap and three Raft elections.
const devReadyTimeout = 2 * time.Minute

// devJobExample is the first thing to try once the cluster is up.
const devJobExample = "strata job submit --tenant demo --region use1,euw1,apse1 --workflow name=checkout,count=4,duration=30s,rate=200"

// devWALSegmentBytes is --wal-segment-bytes' default: the smallest
// segment a node accepts. A NodeWAL preallocates its active segment and
// prepares the next one ahead, so at the node default (64 MiB) an idle
// dev cluster of 12 nodes took 1.5 GB; at 2 MiB its NodeWALs take 48 MiB.
const devWALSegmentBytes = cluster.MinWALSegmentBytes

// devWorkersPerRegion is --workers' default: enough slots for the example
// job (4 workflows per region) to run at once.
const devWorkersPerRegion = 2

type devFlags struct {
	dataDir              string
	wanLatency           time.Duration
	subnet               int
	enableFaultInjection bool
	logLevel             string
	readyTimeout         time.Duration
	workers              int // reference workers per region
	workerCapacity       int
	walSegmentBytes      int64
	tls                  bool // TLS everywhere and encrypted gossip
}

func newDevCmd() *cobra.Command {
	var f devFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local multi-region cluster: 3 regions of 1 gate, 3 managers and reference workers, one process each",
		Long: `dev starts a whole Strata cluster on this machine: regions use1, euw1 and
apse1, each with one gate and three managers, every node a separate
` + "`strata agent`" + ` process on its own loopback IP (127.0.SUBNET+r.n), and
--workers reference workers per region (` + "`strata worker`" + `, ids
w-REGION-N), so a job submitted to it runs to completion. It prints the
nodes and an API token, writes DATA/cluster.json (nodes, workers, pids),
and runs until Ctrl-C, which stops the workers, then every node, cleanly.
A node or worker that dies is reported, not restarted: kill -9 one to
watch the cluster heal. Running dev again on the same --data restarts the
same cluster with the same token.

With --tls every node serves its API over TLS, calls its peers and runs
Raft over mutual TLS, and gossip is encrypted: a CA, each node's
certificate and a client certificate for the CLI are made into DATA/tls
(the CA key stays there, mode 0600), and a gossip key into
DATA/secrets.json. The workers and the CLI (through DATA/cluster.json,
or STRATA_CA_FILE) talk TLS to the nodes. A data directory keeps the
--tls setting of its first run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDev(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	addDevFlags(cmd.Flags(), &f)
	return cmd
}

// addDevFlags declares dev's flags, bound to f.
func addDevFlags(fs *pflag.FlagSet, f *devFlags) {
	fs.StringVar(&f.dataDir, "data", "./.strata-dev", "data directory of the cluster")
	fs.DurationVar(&f.wanLatency, "wan-latency", 50*time.Millisecond, "latency added to traffic between regions")
	fs.IntVar(&f.subnet, "subnet", devcluster.DefaultSubnetBase, "region r listens on 127.0.(subnet+r).0/24")
	fs.BoolVar(&f.enableFaultInjection, "enable-fault-injection", false, "serve the fault-injection endpoint on every node")
	fs.StringVar(&f.logLevel, "log-level", devcluster.DefaultLogLevel, "node log level: debug, info, warn or error")
	fs.DurationVar(&f.readyTimeout, "ready-timeout", devReadyTimeout, "how long to wait for every node to be ready")
	fs.IntVar(&f.workers, "workers", devWorkersPerRegion, "reference workers per region (0: none)")
	fs.IntVar(&f.workerCapacity, "worker-capacity", devcluster.DefaultWorkerCapacity, "workflows each worker runs at once")
	fs.Int64Var(&f.walSegmentBytes, "wal-segment-bytes", devWALSegmentBytes, "every node's NodeWAL segment size (wal_segment_bytes)")
	fs.BoolVar(&f.tls, "tls", false, "TLS on the API, node-to-node calls and Raft, and encrypted gossip; certificates made into DATA/tls")
}

// options turns the flags into the cluster's options.
func (f devFlags) options() devcluster.Options {
	return devcluster.Options{
		DataDir:              f.dataDir,
		SubnetBase:           f.subnet,
		WANLatency:           f.wanLatency,
		EnableFaultInjection: f.enableFaultInjection,
		LogLevel:             f.logLevel,
		WorkersPerRegion:     f.workers,
		WorkerCapacity:       f.workerCapacity,
		WALSegmentBytes:      f.walSegmentBytes,
		TLS:                  f.tls,
	}
}

// runDev starts the cluster, waits for a signal and stops it.
func runDev(ctx context.Context, out, errOut io.Writer, f devFlags) error {
	if f.workerCapacity == 0 { // to devcluster, 0 would mean its default
		return usageError{errors.New("--worker-capacity 0: a worker runs at least one workflow")}
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("dev: find the strata binary: %w", err)
	}
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	var running atomic.Bool // Start reports exits during startup itself
	c, err := devcluster.New(devcluster.Config{
		Options: f.options(),
		Binary:  bin,
		OnExit: func(e devcluster.Exit) {
			if running.Load() {
				fmt.Fprintf(errOut, "%s exited unexpectedly (%s); the others keep running; log: %s\n", e.NodeID, e.Status, e.LogPath)
			}
		},
	})
	if errors.Is(err, devcluster.ErrBadOptions) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "starting %d nodes and %d workers in %s ...\n", len(c.Nodes()), len(c.Workers()), c.DataDir())
	startCtx, cancel := context.WithTimeout(ctx, f.readyTimeout)
	err = c.Start(startCtx)
	cancel()
	if err != nil {
		stopErr := c.StopAll()
		if ctx.Err() != nil { // interrupted while starting
			return stopErr
		}
		return errors.Join(fmt.Errorf("dev: %w", err), stopErr)
	}
	ctl, err := devcluster.ServeControl(c) // DATA/control.sock: `strata chaos` kills, pauses, restarts through it
	if err != nil {
		return errors.Join(fmt.Errorf("dev: %w", err), c.StopAll())
	}
	running.Store(true)
	printDevCluster(out, c)
	<-ctx.Done()
	stopSignals() // a second Ctrl-C ends dev at once; the nodes die with it
	running.Store(false)
	if err := ctl.Close(); err != nil { // resumes paused nodes, so they drain
		fmt.Fprintf(errOut, "dev: control socket: %v\n", err)
	}
	fmt.Fprintln(out, "stopping ...")
	if err := c.StopAll(); err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	fmt.Fprintln(out, "stopped")
	return nil
}

// printDevCluster prints the nodes and how to talk to them.
func printDevCluster(out io.Writer, c *devcluster.Cluster) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tREGION\tAPI")
	for _, n := range c.Nodes() {
		url, _ := c.URL(n.ID())
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n.ID(), n.Config.Role, n.Config.Region, url)
	}
	tw.Flush()
	if ws := c.Workers(); len(ws) > 0 {
		fmt.Fprintf(out, "\nworkers: %d per region, capacity %d each (w-REGION-N; logs: DATA/w-REGION-N/worker.log)\n",
			len(ws)/len(regionsOf(c)), ws[0].Capacity)
	}
	var gates []string // the CLI fails over between them
	for _, n := range c.Nodes() {
		if n.Config.Role == cluster.RoleGate {
			url, _ := c.URL(n.ID())
			gates = append(gates, url)
		}
	}
	fmt.Fprintf(out, "\ntoken: %s\nread-only token: %s (jobs:read)\ncluster file: %s\n", c.Token(), devcluster.ViewerToken(c.Token()), c.ClusterFilePath())
	tlsFiles := c.TLS()
	if tlsFiles != nil {
		fmt.Fprintf(out, "tls: CA %s (trust it in a browser for the web console; the CA key stays in its directory); gossip encrypted\n", tlsFiles.CAFile)
	}
	if len(gates) > 0 {
		fmt.Fprintf(out, "web console: %s/ui/ (every node serves it; enter a token)\n", gates[0])
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "  export STRATA_ADDR=%s STRATA_TOKEN=%s\n", strings.Join(gates, ","), c.Token())
	if tlsFiles != nil {
		fmt.Fprintf(out, "  export %s=%s\n", envCAFile, tlsFiles.CAFile)
	}
	fmt.Fprintf(out, "  %s\n\nCtrl-C stops the cluster.\n", devJobExample)
}

// regionsOf lists the cluster's regions.
func regionsOf(c *devcluster.Cluster) []string {
	var regions []string
	for _, n := range c.Nodes() {
		if !slices.Contains(regions, n.Config.Region) {
			regions = append(regions, n.Config.Region)
		}
	}
	return regions
}

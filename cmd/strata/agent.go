package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/cluster"
)

func newAgentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run a gate or manager node",
		Long: `Run one Strata node: a gate (global Raft group) or a manager (its region's
Raft group). Every config key can be set in the YAML file (--config), as a
STRATA_ environment variable (STRATA_NODE_ID) or as a flag (--node-id);
flags beat the environment, which beats the file.

SIGTERM or Ctrl-C drains the node (leadership transfer, in-flight requests)
and exits 0 without leaving the group; a restart rejoins with its data.

SIGHUP reloads the TLS files (tls.*) and the API tokens (tokens:, which
may be given as sha256:<hex> digests) without a restart; other keys need
one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadNodeConfig(cmd.Flags(), os.Environ())
			if err != nil {
				return err
			}
			reload := func() (cluster.NodeConfig, error) { return loadNodeConfig(cmd.Flags(), os.Environ()) }
			return runAgent(cmd.Context(), cfg, reload)
		},
	}
	addNodeFlags(cmd.Flags())
	return cmd
}

// runAgent runs the node until a signal or a fatal error; reload reads the
// config again on SIGHUP (nil: SIGHUP is ignored).
func runAgent(ctx context.Context, cfg cluster.NodeConfig, reload func() (cluster.NodeConfig, error)) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return usageError{fmt.Errorf("log_level %q: %w", cfg.LogLevel, err)}
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ver, _ := buildVersion()
	fatal := make(chan error, 1)
	node, err := cluster.StartNode(cfg, cluster.NodeOptions{Logger: log, Version: ver,
		OnFatal: func(err error) { fatal <- err }})
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	sig, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-hup:
			reloadNode(log, node, reload)
		case <-sig.Done():
			log.Info("signal: draining")
			if err := node.Drain(context.Background()); err != nil {
				return fmt.Errorf("drain: %w", err)
			}
			log.Info("stopped")
			return nil
		case err := <-fatal:
			_ = node.Close()
			return err
		}
	}
}

// reloadNode is SIGHUP: read the config again and reload what a running
// node can (TLS files, tokens); a failure keeps what was loaded.
func reloadNode(log *slog.Logger, node *cluster.Node, reload func() (cluster.NodeConfig, error)) {
	if reload == nil {
		return
	}
	next, err := reload()
	if err == nil {
		err = node.Reload(next)
	}
	if err != nil {
		log.Error("sighup: reload failed, keeping what was loaded", "err", err)
		return
	}
	log.Info("sighup: reloaded")
}

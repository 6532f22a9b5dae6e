// Command strata is the single binary of Strata: agent, dev cluster, worker,
// CLI client and operator tools. It parses flags and configuration and wires
// packages together; it holds no logic of its own.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/strata-ledger/strata/transport/api"
)

// Exit codes of every strata command.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError marks an error as the caller's misuse (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes the command line and maps the outcome to an exit code.
func run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	// $TRACEPARENT (the W3C trace context, as OpenTelemetry's tools pass
	// it to a child process) joins the calls this command makes to the
	// caller's trace.
	err := root.ExecuteContext(api.WithTraceparent(context.Background(), os.Getenv("TRACEPARENT")))
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(os.Stderr, "strata:", err)
	// A command may choose its exit code (job watch: the job's outcome).
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return exitUsage
	}
	return exitError
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "strata",
		Short:         "Strata: a Raft-replicated job ledger for multi-datacenter load testing",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	// Every subcommand registers itself here, one line each.
	root.AddCommand(
		newVersionCmd(),
		newWALCmd(),
		newAgentCmd(),
		newDevCmd(),
		newWorkerCmd(),
		newJobCmd(),
		newChainCmd(),
		newAntiEntropyCmd(),
		newSnapshotCmd(),
		newMembersCmd(),
		newRaftCmd(),
		newBenchCmd(),
		newBundleCmd(),
		newHealthCmd(),
		newTLSCmd(),
		newKeyringCmd(),
		newOpenAPICmd(),
		newChaosCmd(),
		newQuotaCmd(),
		newThrottleCmd(),
		newBreakerCmd(),
		newMaintenanceCmd(),
	)
	return root
}

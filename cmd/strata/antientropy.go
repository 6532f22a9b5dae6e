package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/transport/api"
)

func newAntiEntropyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "antientropy",
		Short: "Show or run anti-entropy: regional ↔ global ledgers and replicas of every group",
	}
	f := addClientFlags(cmd)
	show := func(run bool) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			var st *api.AntiEntropyStatus
			var meta api.ResponseMeta
			if run {
				st, meta, err = c.RunAntiEntropy(cmd.Context())
			} else {
				st, meta, err = c.AntiEntropy(cmd.Context())
			}
			if err != nil {
				return err
			}
			if f.json() {
				return printJSON(cmd.OutOrStdout(), meta.Body)
			}
			t := newTable(cmd.OutOrStdout(), "KIND", "GROUP", "ROOTS_EQUAL", "ROUNDS", "LAST_ROUND", "DIFFERENCES", "REPAIRED", "BYTES", "MS", "ERROR")
			for _, p := range st.Pairs {
				last := "-"
				if !p.LastRound.IsZero() {
					last = p.LastRound.UTC().Format(time.RFC3339)
				}
				t.row(p.Kind, p.Group, strconv.FormatBool(p.RootsEqual), strconv.FormatUint(p.Rounds, 10), last,
					strconv.Itoa(p.Differences), strconv.Itoa(p.Repaired), strconv.Itoa(p.Bytes), strconv.FormatInt(p.DurationMs, 10), orDash(p.Error))
			}
			if err := t.flush(); err != nil {
				return err
			}
			if len(st.DivergentReplicas) > 0 || len(st.Unreachable) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "divergent replicas: %s; unreachable: %s\n",
					orDash(strings.Join(st.DivergentReplicas, ", ")), orDash(strings.Join(st.Unreachable, ", ")))
			}
			return nil
		}
	}
	cmd.AddCommand(
		&cobra.Command{Use: "status", Short: "The latest rounds, for the whole cluster (operator token)", Args: cobra.NoArgs, RunE: show(false)},
		&cobra.Command{Use: "run", Short: "Run a regional ↔ global round in every region now, then show the status", Args: cobra.NoArgs, RunE: show(true)},
	)
	return cmd
}

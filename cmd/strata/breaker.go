package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/transport/api"
)

// newBreakerCmd is `strata breaker`: the circuit breakers of a region's
// dispatch, per (tenant, job type) (issue 18 §2).
func newBreakerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "breaker",
		Short: "List, open and close the circuit breakers of a region's dispatch",
		Long: `Circuit breakers pause the dispatch of a failing job type.

Each region keeps one breaker per (tenant, job type). When the share of a
job type's workflows that failed within the breaker window reaches the
threshold (with at least the minimum of samples), the breaker opens: the
type's workflows stay DISPATCHED and no new lease is granted. After the
cool-down it half-opens and lets a few workflows run; their success closes
it, a failure opens it again. The state lives in the region's ledger, so a
leader change keeps it.

An operator may force a breaker open (it stays open until closed by an
operator) or close it (automatic operation resumes with an empty window);
both need a reason and a ticket, and are recorded in the tenant's audit
chain. The commands answer for the region of the node they reach (--addr).

  strata breaker list
  strata breaker open acme render --reason "bad build" --ticket OPS-42
  strata breaker close acme render --reason "fixed" --ticket OPS-42`,
	}
	f := addClientFlags(cmd)
	list := &cobra.Command{Use: "list", Short: "List the region's breakers that ever left closed", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			out, err := c.Breakers(cmd.Context(), f.readOptions())
			if err != nil {
				return err
			}
			if f.json() {
				return printValue(cmd, out)
			}
			t := newTable(cmd.OutOrStdout(), "TENANT", "JOB TYPE", "STATE", "SINCE", "FORCED", "BY", "TICKET", "WHY")
			for _, b := range out.Breakers {
				t.row(b.Tenant, b.JobType, b.State, msTime(b.Since), b.Forced, b.Requestor, b.Ticket, b.Why)
			}
			return t.flush()
		}}
	cmd.AddCommand(list, forceBreakerCmd(f, api.BreakerOpen), forceBreakerCmd(f, api.BreakerClose))
	return cmd
}

func forceBreakerCmd(f *clientFlags, action string) *cobra.Command {
	var ch api.GovernanceChange
	short := "Force a breaker open: no new dispatch of the job type until an operator closes it"
	if action == api.BreakerClose {
		short = "Close a breaker: dispatch resumes, failures are counted from scratch"
	}
	cmd := &cobra.Command{Use: action + " TENANT JOB_TYPE", Short: short, Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, a []string) error {
			if ch.Reason == "" || ch.Ticket == "" {
				return usageError{fmt.Errorf("--reason and --ticket are required: the change is audited")}
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			out, err := c.ForceBreaker(cmd.Context(), a[0], a[1], action, ch)
			if err != nil {
				return err
			}
			if f.json() {
				return printValue(cmd, out)
			}
			b := out.Breaker
			fmt.Fprintf(cmd.OutOrStdout(), "breaker %s/%s: %s (forced %v) at %s\n", b.Tenant, b.JobType, b.State, b.Forced, out.HLC)
			return nil
		}}
	cmd.Flags().StringVar(&ch.Reason, "reason", "", "why (required, recorded in the audit chain)")
	cmd.Flags().StringVar(&ch.Ticket, "ticket", "", "the change's ticket (required)")
	return cmd
}

// printValue prints v as JSON.
func printValue(cmd *cobra.Command, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return printJSON(cmd.OutOrStdout(), b)
}

// msTime formats Unix ms as RFC 3339 (UTC), "-" for 0.
func msTime(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}

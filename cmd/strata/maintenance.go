package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/transport/api"
)

// newMaintenanceCmd is `strata maintenance`: a region's maintenance mode
// (issue 18 §2).
func newMaintenanceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "maintenance",
		Short: "Show or switch a region's maintenance mode",
		Long: `Maintenance mode stops a region from granting new leases.

While it is on, workflows already leased run to their end, workflows
waiting for a lease stay DISPATCHED, and every read and status call keeps
working (GET /v1/cluster/status shows the mode). The mode is kept in the
region's ledger, so a leader change keeps it. Switching needs a reason and
a ticket, which the ledger records with the change.

--region names the region you mean; it must be the region of the node
reached (--addr), a guard against switching the wrong one.

  strata maintenance status
  strata maintenance on  --region use1 --reason "kernel upgrade" --ticket OPS-7
  strata maintenance off --region use1 --reason "done" --ticket OPS-7`,
	}
	f := addClientFlags(cmd)
	status := &cobra.Command{Use: "status", Short: "Show the region's maintenance mode", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			st, err := c.Maintenance(cmd.Context(), f.readOptions())
			if err != nil {
				return err
			}
			if f.json() {
				return printValue(cmd, st)
			}
			printMaintenance(cmd, st)
			return nil
		}}
	cmd.AddCommand(status, switchMaintenanceCmd(f, true), switchMaintenanceCmd(f, false))
	return cmd
}

func switchMaintenanceCmd(f *clientFlags, on bool) *cobra.Command {
	var req api.MaintenanceRequest
	use, short := "on", "Stop granting leases in the region (running workflows finish)"
	if !on {
		use, short = "off", "Grant leases in the region again"
	}
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if req.Region == "" || req.Reason == "" || req.Ticket == "" {
				return usageError{fmt.Errorf("--region, --reason and --ticket are required")}
			}
			req.On = on
			c, err := f.client()
			if err != nil {
				return err
			}
			out, err := c.SetMaintenance(cmd.Context(), req)
			if err != nil {
				return err
			}
			if f.json() {
				return printValue(cmd, out)
			}
			printMaintenance(cmd, out.Maintenance)
			return nil
		}}
	cmd.Flags().StringVar(&req.Region, "region", "", "the region (required; must be the region of the node reached)")
	cmd.Flags().StringVar(&req.Reason, "reason", "", "why (required, recorded with the change)")
	cmd.Flags().StringVar(&req.Ticket, "ticket", "", "the change's ticket (required)")
	return cmd
}

func printMaintenance(cmd *cobra.Command, st api.MaintenanceStatus) {
	mode := "off"
	if st.On {
		mode = "ON: no new leases"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "region %s: maintenance %s", st.Region, mode)
	if st.Since != 0 {
		fmt.Fprintf(cmd.OutOrStdout(), " (since %s, by %s, ticket %s: %s)", msTime(st.Since), st.Requestor, st.Ticket, st.Reason)
	}
	fmt.Fprintln(cmd.OutOrStdout())
}

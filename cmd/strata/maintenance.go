package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/transport/api"
)

// newMaintenanceCmd is `strata maintenance`: a region's or the whole
// cluster's maintenance mode (issue 18 §2).
func newMaintenanceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "maintenance",
		Short: "Show or switch maintenance mode, of a region or of the whole cluster",
		Long: `Maintenance mode stops a region from granting new leases.

While it is on, workflows already leased run to their end, workflows
waiting for a lease stay DISPATCHED, and every read and status call keeps
working (GET /v1/cluster/status shows the mode). With --drain the running
workflows are also taken back from their workers, at most 256 per
reconcile pass: each goes back to DISPATCHED with the progress already
recorded, its worker is told to stop at its next heartbeat, and it is
leased again, under a new fence, once maintenance is off. Switching needs
a reason and a ticket, which the ledger records with the change.

--region R switches region R's own mode. It is kept in the region's
ledger, so a leader change keeps it; R must be the region of the node
reached (--addr), a guard against switching the wrong one.

--cluster switches the cluster's mode: it is kept in the global ledger
(the gates), and the global leader copies it into every region until
each holds it, a region that is down when it is switched included, as
soon as it is back. A region is in maintenance while its own mode or the
cluster's is on: switching the cluster off leaves a region an operator
put in maintenance by itself where it is.

status shows the cluster's mode and each region's: its own, the copy of
the cluster's it holds (or not yet), and what it does.

  strata maintenance status
  strata maintenance on  --region use1 --reason "kernel upgrade" --ticket OPS-7
  strata maintenance off --region use1 --reason "done" --ticket OPS-7
  strata maintenance on  --cluster --drain --reason "storage migration" --ticket OPS-9
  strata maintenance off --cluster --reason "done" --ticket OPS-9`,
	}
	f := addClientFlags(cmd)
	status := &cobra.Command{Use: "status", Short: "Show the cluster's maintenance mode and every region's", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			st, err := c.ClusterMaintenance(cmd.Context(), f.readOptions())
			if err != nil {
				return err
			}
			if f.json() {
				return printValue(cmd, st)
			}
			printClusterMaintenance(cmd, st)
			return nil
		}}
	cmd.AddCommand(status, switchMaintenanceCmd(f, true), switchMaintenanceCmd(f, false))
	return cmd
}

func switchMaintenanceCmd(f *clientFlags, on bool) *cobra.Command {
	var req api.MaintenanceRequest
	var cluster bool
	use, short := "on", "Stop granting leases in a region or the cluster (--drain: take running workflows back too)"
	if !on {
		use, short = "off", "Grant leases again (a region's own mode, or the cluster's)"
	}
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case cluster == (req.Region != ""):
				return usageError{fmt.Errorf("give one of --region R and --cluster")}
			case req.Reason == "" || req.Ticket == "":
				return usageError{fmt.Errorf("--reason and --ticket are required")}
			}
			req.On = on
			c, err := f.client()
			if err != nil {
				return err
			}
			var out api.MaintenanceResponse
			if cluster {
				out, err = c.SetClusterMaintenance(cmd.Context(), api.ClusterMaintenanceRequest{On: on, Drain: req.Drain, GovernanceChange: req.GovernanceChange})
			} else {
				out, err = c.SetMaintenance(cmd.Context(), req)
			}
			if err != nil {
				return err
			}
			if f.json() {
				return printValue(cmd, out)
			}
			printMaintenance(cmd, out.Maintenance)
			if cluster {
				fmt.Fprintln(cmd.OutOrStdout(), "every region takes it within a reconcile pass of the gates' leader; `strata maintenance status` shows which hold it")
			}
			return nil
		}}
	cmd.Flags().StringVar(&req.Region, "region", "", "the region (must be the region of the node reached)")
	cmd.Flags().BoolVar(&cluster, "cluster", false, "the whole cluster's mode (kept by the gates, copied into every region)")
	if on {
		cmd.Flags().BoolVar(&req.Drain, "drain", false, "also take running workflows back from their workers (they wait DISPATCHED, progress kept)")
	}
	cmd.Flags().StringVar(&req.Reason, "reason", "", "why (required, recorded with the change)")
	cmd.Flags().StringVar(&req.Ticket, "ticket", "", "the change's ticket (required)")
	return cmd
}

// printMaintenance prints one mode: the record's line, then for a
// region what it does when the cluster's mode counts too.
func printMaintenance(cmd *cobra.Command, st api.MaintenanceStatus) {
	w := cmd.OutOrStdout()
	name := "cluster"
	if st.Scope != api.MaintenanceScopeCluster {
		name = "region " + st.Region
	}
	if st.Error != "" {
		fmt.Fprintf(w, "%s: unknown (%s)\n", name, st.Error)
		return
	}
	fmt.Fprintf(w, "%s: maintenance %s%s\n", name, modeText(st.On, st.Drain), changeText(st))
	if st.Scope == api.MaintenanceScopeCluster {
		return
	}
	if cl := st.Cluster; cl != nil {
		fmt.Fprintf(w, "  cluster's mode as the region holds it: %s%s\n", modeText(cl.On, cl.Drain), changeText(*cl))
	}
	if e := st.Effective; e != nil && e.On {
		fmt.Fprintf(w, "  in effect: %s (by %s)\n", modeText(e.On, e.Drain), strings.Join(e.By, " and "))
	} else if e != nil {
		fmt.Fprintln(w, "  in effect: off, leases are granted")
	}
}

// printClusterMaintenance prints the cluster's mode, then each region's,
// marking a region whose copy of the cluster's mode is not the current
// one yet.
func printClusterMaintenance(cmd *cobra.Command, st api.ClusterMaintenanceStatus) {
	if st.Cluster.HLC == nil {
		fmt.Fprintln(cmd.OutOrStdout(), "cluster: maintenance off (never switched)")
	} else {
		printMaintenance(cmd, st.Cluster)
	}
	for _, r := range st.Regions {
		printMaintenance(cmd, r)
		if st.Cluster.HLC != nil && r.Error == "" && !holdsCluster(r, st.Cluster) {
			fmt.Fprintln(cmd.OutOrStdout(), "  (does not hold the cluster's current mode yet)")
		}
	}
}

// holdsCluster reports whether region status r holds the cluster's record
// cl: the copy carries the change's HLC.
func holdsCluster(r, cl api.MaintenanceStatus) bool {
	return r.Cluster != nil && r.Cluster.HLC != nil && cl.HLC != nil && *r.Cluster.HLC == *cl.HLC
}

func modeText(on, drain bool) string {
	switch {
	case on && drain:
		return "ON, draining: no new leases, running workflows taken back"
	case on:
		return "ON: no new leases"
	}
	return "off"
}

func changeText(st api.MaintenanceStatus) string {
	if st.Since == 0 {
		return ""
	}
	return fmt.Sprintf(" (since %s, by %s, ticket %s: %s)", msTime(st.Since), st.Requestor, st.Ticket, st.Reason)
}

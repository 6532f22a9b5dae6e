package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/transport/api"
)

// Governance commands (issue 18): quotas, throttles, job replay. Every
// change needs --reason and --ticket: it is audited in the ledger.

func newQuotaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "List, set and inspect tenant quotas (max_active, max_per_hour, burst, fleet share)",
		Long: `Quota policies live in the global ledger and change through Raft. A policy
applies to a tenant, or to one job type of a tenant (id TENANT:TYPE).
A submit over quota gets 429 with Retry-After and the limit in details,
or, submitted with "admission": "queue", waits PENDING until admitted in
priority order. Changing a policy needs the quota:write scope (operator
implies it) and a --reason and --ticket.`,
	}
	f := addClientFlags(cmd)
	cmd.AddCommand(newQuotaListCmd(f), newQuotaSetCmd(f), newQuotaDeleteCmd(f), newQuotaStatusCmd(f), newQuotaFleetCmd(f))
	return cmd
}

func newQuotaListCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the quota policies the token sees, and the fleet capacity",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			out, meta, err := c.Quotas(cmd.Context())
			if err != nil {
				return err
			}
			if f.json() {
				return printJSON(cmd.OutOrStdout(), meta.Body)
			}
			t := newTable(cmd.OutOrStdout(), "ID", "MAX_ACTIVE", "MAX_PER_HOUR", "BURST", "WEIGHT", "RESERVED", "TICKET", "REASON")
			for _, p := range out.Policies {
				t.row(p.ID, p.MaxActive, p.MaxPerHour, p.Burst, p.Weight, p.Reserved, orDash(p.Ticket), orDash(p.Reason))
			}
			if out.Fleet != nil {
				t.row("(fleet)", fmt.Sprintf("capacity=%d", out.Fleet.Capacity), "strategy="+out.Fleet.Strategy, "", "", "", "", "")
			}
			return t.flush()
		},
	}
}

func newQuotaSetCmd(f *clientFlags) *cobra.Command {
	var req api.PutQuotaPolicyRequest
	cmd := &cobra.Command{
		Use:   "set TENANT[:JOB_TYPE]",
		Short: "Set a tenant's (or a tenant's job type's) quota",
		Example: `  strata quota set acme --max-active 10 --reason "launch week" --ticket OPS-12
  strata quota set acme:render --max-active 2 --max-per-hour 100 --burst 10 --reason cap --ticket OPS-13`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Tenant, req.JobType, _ = strings.Cut(args[0], ":")
			c, err := f.client()
			if err != nil {
				return err
			}
			out, meta, err := c.PutQuotaPolicy(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			return printGovernance(cmd, f, meta, out)
		},
	}
	fl := cmd.Flags()
	fl.Uint32Var(&req.MaxActive, "max-active", 0, "most jobs active at once (0: no limit)")
	fl.Uint32Var(&req.MaxPerHour, "max-per-hour", 0, "most jobs created per hour, for the whole cluster (0: no limit); more wait queued or get 429")
	fl.Uint32Var(&req.Burst, "burst", 0, "jobs created at once before max-per-hour paces them (default max-per-hour)")
	fl.Uint32Var(&req.Weight, "weight", 0, "weight of the tenant's share of the fleet capacity (proportional)")
	fl.Uint32Var(&req.Reserved, "reserved", 0, "reserved minimum of the fleet capacity (reserved strategy)")
	auditFlags(cmd, &req.Reason, &req.Ticket)
	return cmd
}

func newQuotaDeleteCmd(f *clientFlags) *cobra.Command {
	var req api.AuditRequest
	cmd := &cobra.Command{
		Use:   "delete TENANT[:JOB_TYPE]",
		Short: "Remove a quota policy",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			out, meta, err := c.DeleteQuotaPolicy(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			return printGovernance(cmd, f, meta, out)
		},
	}
	auditFlags(cmd, &req.Reason, &req.Ticket)
	return cmd
}

func newQuotaFleetCmd(f *clientFlags) *cobra.Command {
	var req api.PutFleetQuotaRequest
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Set the fleet capacity shared among the tenants with a policy",
		Example: `  strata quota fleet --capacity 100 --strategy proportional --reason "q4 plan" --ticket OPS-20
strategies: fixed, equal, proportional, reserved (reserved minimum plus fair share)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			out, meta, err := c.PutFleetQuota(cmd.Context(), req)
			if err != nil {
				return err
			}
			return printGovernance(cmd, f, meta, out)
		},
	}
	cmd.Flags().Uint32Var(&req.Capacity, "capacity", 0, "jobs active at once over the tenants with a policy")
	cmd.Flags().StringVar(&req.Strategy, "strategy", "equal", "fixed, equal, proportional or reserved")
	auditFlags(cmd, &req.Reason, &req.Ticket)
	return cmd
}

func newQuotaStatusCmd(f *clientFlags) *cobra.Command {
	var tenant string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show a tenant's quota usage: used, allowed, pending (queued)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			out, meta, err := c.QuotaStatus(cmd.Context(), tenant)
			if err != nil {
				return err
			}
			if f.json() {
				return printJSON(cmd.OutOrStdout(), meta.Body)
			}
			t := newTable(cmd.OutOrStdout(), "TENANT", "JOB_TYPE", "USED", "ALLOWED", "PENDING", "MAX_PER_HOUR", "PAUSED")
			for _, l := range out.Limits {
				allowed := "-"
				if l.Allowed > 0 {
					allowed = fmt.Sprint(l.Allowed)
				}
				t.row(out.Tenant, orDash(l.JobType), l.Used, allowed, l.Pending, l.MaxPerHour, out.Paused)
			}
			return t.flush()
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant (default: the token's)")
	return cmd
}

func newThrottleCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "throttle",
		Short: "Pause and resume a tenant or a job type (audited)",
		Long: `A pause stops new work of a tenant, a job type (every tenant's), or one
tenant's job type: its jobs that have not started are not dispatched and
its queued jobs are not admitted. Paused work keeps its state and resumes
where it stopped. Running work runs on. Needs the throttle:write scope
(operator implies it) and a --reason and --ticket.`,
	}
	f := addClientFlags(cmd)
	for _, action := range []string{"pause", "resume"} {
		var req api.ThrottleRequest
		c := &cobra.Command{
			Use:     action,
			Short:   strings.ToUpper(action[:1]) + action[1:] + " a tenant (--tenant), a job type (--job-type), or both",
			Example: "  strata throttle " + action + " --tenant acme --reason incident --ticket INC-7",
			Args:    cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				req.Action = action
				cl, err := f.client()
				if err != nil {
					return err
				}
				out, meta, err := cl.SetThrottle(cmd.Context(), req)
				if err != nil {
					return err
				}
				return printGovernance(cmd, f, meta, out)
			},
		}
		c.Flags().StringVar(&req.Tenant, "tenant", "", "the tenant to "+action)
		c.Flags().StringVar(&req.JobType, "job-type", "", "the job type to "+action)
		auditFlags(c, &req.Reason, &req.Ticket)
		cmd.AddCommand(c)
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the pauses in force",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			out, meta, err := c.Throttles(cmd.Context())
			if err != nil {
				return err
			}
			if f.json() {
				return printJSON(cmd.OutOrStdout(), meta.Body)
			}
			t := newTable(cmd.OutOrStdout(), "TENANT", "JOB_TYPE", "TICKET", "REASON", "BY")
			for _, th := range out.Throttles {
				t.row(orDash(th.Tenant), orDash(th.JobType), orDash(th.Ticket), orDash(th.Reason), orDash(th.Requestor))
			}
			return t.flush()
		},
	})
	return cmd
}

func newJobReplayCmd(f *clientFlags) *cobra.Command {
	var req api.ReplayRequest
	cmd := &cobra.Command{
		Use:   "replay JOB_ID",
		Short: "Replay a job: a new job with the same spec, high priority, linked to the original (replay_of)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			out, meta, err := c.ReplayJob(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			if f.json() {
				return printJSON(cmd.OutOrStdout(), meta.Body)
			}
			t := newTable(cmd.OutOrStdout())
			t.row("job_id", out.JobID)
			t.row("replay_of", out.ReplayOf)
			t.row("durability", out.Durability)
			return t.flush()
		},
	}
	cmd.Flags().StringVar(&req.Reason, "reason", "", "why the job is replayed (kept with the link, spec.replay_reason)")
	return cmd
}

// auditFlags registers the required --reason and --ticket.
func auditFlags(cmd *cobra.Command, reason, ticket *string) {
	cmd.Flags().StringVar(reason, "reason", "", "why (required: the change is audited)")
	cmd.Flags().StringVar(ticket, "ticket", "", "the change's ticket (required)")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		switch {
		case strings.TrimSpace(*reason) == "":
			return usageError{errors.New("--reason is required: the change is audited")}
		case strings.TrimSpace(*ticket) == "":
			return usageError{errors.New("--ticket is required: the change is audited")}
		}
		return nil
	}
}

func printGovernance(cmd *cobra.Command, f *clientFlags, meta api.ResponseMeta, out *api.GovernanceResponse) error {
	if f.json() {
		return printJSON(cmd.OutOrStdout(), meta.Body)
	}
	t := newTable(cmd.OutOrStdout())
	t.row("id", out.ID)
	t.row("durability", out.Durability)
	t.row("session", orDash(out.Session))
	return t.flush()
}

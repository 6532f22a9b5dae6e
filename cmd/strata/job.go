package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// maxPages bounds the pages `--all` follows, so a server that keeps
// returning cursors cannot keep the CLI busy forever.
const maxPages = 10_000

func newJobCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "job",
		Short: "Submit, inspect and cancel jobs",
	}
	f := addClientFlags(cmd)
	cmd.AddCommand(newJobSubmitCmd(f), newJobStatusCmd(f), newJobListCmd(f), newJobCancelCmd(f), newJobEventsCmd(f),
		newJobWatchCmd(f), newJobReplayCmd(f))
	return cmd
}

func newJobSubmitCmd(f *clientFlags) *cobra.Command {
	var sf specFlags
	cmd := &cobra.Command{
		Use:   "submit",
		Short: "Submit a job from flags or from a JSON spec (-f FILE, - for stdin)",
		Example: `  strata job submit --tenant acme --region use1,euw1 --timeout 10m \
      --workflow name=checkout,count=4,duration=30s,rate=200,failure_ratio=0
  strata job submit -f job.json --durability local`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := sf.spec(cmd)
			if err != nil {
				return err
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			resp, meta, err := c.SubmitJob(cmd.Context(), spec, f.writeOptions())
			if err != nil {
				return err
			}
			if f.json() {
				return printJSON(cmd.OutOrStdout(), meta.Body)
			}
			t := newTable(cmd.OutOrStdout())
			t.row("job_id", resp.JobID)
			t.row("durability", resp.Durability)
			t.row("session", orDash(cmp.Or(resp.Session, meta.Session)))
			if resp.Existing {
				t.row("existing", "true")
			}
			if resp.Queued { // 202: over quota, waiting PENDING for a slot
				t.row("queued", "true ("+resp.QueuedBy+")")
				if resp.NextEligibleAt != "" {
					t.row("next_eligible_at", resp.NextEligibleAt)
				}
			}
			return t.flush()
		},
	}
	sf.register(cmd)
	return cmd
}

func newJobStatusCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "status JOB_ID",
		Short: "Show a job's state: status, per-region acceptance and progress",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			st, meta, err := c.Job(cmd.Context(), args[0], f.readOptions())
			if err != nil {
				return err
			}
			if f.json() {
				return printJSON(cmd.OutOrStdout(), meta.Body)
			}
			return printJobState(cmd.OutOrStdout(), st)
		},
	}
}

func printJobState(w io.Writer, st *fsm.JobState) error {
	t := newTable(w)
	t.row("job_id", st.JobID)
	t.row("tenant", st.Tenant)
	t.row("status", st.Status)
	if st.Decision.Type != 0 {
		t.row("decision", st.Decision.Type)
	}
	t.row("fence", st.Fence)
	t.row("hlc", st.HLC)
	t.row("events", st.Events)
	t.row("timeout", st.Spec.Timeout)
	for _, wf := range st.Spec.Workflows {
		t.row("workflow", fmt.Sprintf("%s count=%d duration=%s rate=%g failure_ratio=%g",
			wf.Name, wf.Count, wf.Duration, wf.Rate, wf.FailureRatio))
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = newTable(w, "REGION", "STATUS", "WORKERS", "COMPLETED", "FAILED", "CANCELLED_WORKFLOWS")
	for i := range st.Regions {
		r := &st.Regions[i]
		t.row(r.Region, r.Status(), r.WorkerCount, r.Completed, r.Failed, r.WorkflowsCancelled)
	}
	return t.flush()
}

func newJobListCmd(f *clientFlags) *cobra.Command {
	var (
		q   api.JobQuery
		all bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs, one page at a time (--all follows every page)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if q.Status != "" {
				q.Status = strings.ToUpper(q.Status)
				if _, err := fsm.ParseJobStatus(q.Status); err != nil {
					return usageError{fmt.Errorf("--status %q: want PENDING, RUNNING, CANCELLING, COMPLETED, FAILED, CANCELLED or TIMED_OUT", q.Status)}
				}
			}
			if q.Limit < 0 {
				return usageError{fmt.Errorf("--limit %d: must not be negative", q.Limit)}
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			jobs, next, printed, err := collectPages(cmd.OutOrStdout(), f.json(), "jobs", q.Cursor, all,
				func(cursor string) ([]*fsm.JobState, string, api.ResponseMeta, error) {
					q.Cursor = cursor
					page, meta, err := c.ListJobs(cmd.Context(), q, f.readOptions())
					if err != nil {
						return nil, "", meta, err
					}
					return page.Jobs, page.NextCursor, meta, nil
				})
			if err != nil || printed {
				return err
			}
			t := newTable(cmd.OutOrStdout(), "JOB_ID", "TENANT", "STATUS", "REGIONS", "COMPLETED", "FAILED", "HLC")
			for _, j := range jobs {
				var done, failed uint64
				regions := make([]string, 0, len(j.Regions))
				for _, r := range j.Regions {
					done, failed = done+r.Completed, failed+r.Failed
					regions = append(regions, r.Region)
				}
				t.row(j.JobID, j.Tenant, j.Status, orDash(strings.Join(regions, ",")), done, failed, j.HLC)
			}
			if err := t.flush(); err != nil {
				return err
			}
			printNextCursor(cmd.ErrOrStderr(), next, all)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&q.Tenant, "tenant", "", "only jobs of this tenant")
	fl.StringVar(&q.Status, "status", "", "only jobs in this status (PENDING, RUNNING, CANCELLING, COMPLETED, FAILED, CANCELLED, TIMED_OUT)")
	fl.StringVar(&q.Region, "region", "", "only jobs assigned to this region")
	fl.IntVar(&q.Limit, "limit", 0, "jobs per page (default: the server's)")
	fl.StringVar(&q.Cursor, "cursor", "", "continue after this cursor (printed by the previous page)")
	fl.BoolVar(&all, "all", false, "follow every page")
	return cmd
}

func newJobCancelCmd(f *clientFlags) *cobra.Command {
	var req api.CancelJobRequest
	cmd := &cobra.Command{
		Use:   "cancel JOB_ID",
		Short: "Ask for a job's cancellation (cancellation wins over any concurrent change)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("requestor") {
				req.Requestor = os.Getenv("USER")
			}
			resp, meta, err := c.CancelJob(cmd.Context(), args[0], req, f.writeOptions())
			if err != nil {
				return err
			}
			if f.json() {
				return printJSON(cmd.OutOrStdout(), meta.Body)
			}
			t := newTable(cmd.OutOrStdout())
			t.row("job_id", resp.JobID)
			t.row("durability", resp.Durability)
			t.row("session", orDash(cmp.Or(resp.Session, meta.Session)))
			t.row("outcome", orDash(resp.Outcome))
			return t.flush()
		},
	}
	cmd.Flags().StringVar(&req.Reason, "reason", "", "why the job is cancelled (kept in its history)")
	cmd.Flags().StringVar(&req.Requestor, "requestor", "", "who asks (default: $USER)")
	return cmd
}

func newJobEventsCmd(f *clientFlags) *cobra.Command {
	var (
		p   api.Page
		all bool
	)
	cmd := &cobra.Command{
		Use:   "events JOB_ID",
		Short: "Show a job's history in order, with HLC and chain link (--all follows every page)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if p.Limit < 0 {
				return usageError{fmt.Errorf("--limit %d: must not be negative", p.Limit)}
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			events, next, printed, err := collectPages(cmd.OutOrStdout(), f.json(), "events", p.Cursor, all,
				func(cursor string) ([]fsm.StoredEvent, string, api.ResponseMeta, error) {
					p.Cursor = cursor
					page, meta, err := c.JobEvents(cmd.Context(), args[0], p, f.readOptions())
					if err != nil {
						return nil, "", meta, err
					}
					return page.Events, page.NextCursor, meta, nil
				})
			if err != nil || printed {
				return err
			}
			t := newTable(cmd.OutOrStdout(), "SEQ", "HLC", "TYPE", "REGION", "NODE", "FENCE", "ID", "LINK")
			for i := range events {
				e := &events[i]
				link := e.Link.String()
				t.row(e.Seq, e.HLC, e.Type, e.Region, e.Node, e.Fence, e.ID, link[:12])
			}
			if err := t.flush(); err != nil {
				return err
			}
			printNextCursor(cmd.ErrOrStderr(), next, all)
			return nil
		},
	}
	cmd.Flags().IntVar(&p.Limit, "limit", 0, "events per page (default: the server's)")
	cmd.Flags().StringVar(&p.Cursor, "cursor", "", "continue after this cursor (printed by the previous page)")
	cmd.Flags().BoolVar(&all, "all", false, "follow every page")
	return cmd
}

// collectPages fetches a list's page at cursor, or with all every page
// after it, and returns the items and the last next cursor. With -o json
// it prints instead (the page as the server sent it, or with all one
// {field: [...]} of every page's items) and returns printed.
func collectPages[T any](w io.Writer, asJSON bool, field, cursor string, all bool,
	fetch func(cursor string) ([]T, string, api.ResponseMeta, error)) (items []T, next string, printed bool, err error) {
	var raw []json.RawMessage
	err = eachPage(cursor, all, func(cursor string) (string, error) {
		page, nextCursor, meta, err := fetch(cursor)
		if err != nil {
			return "", err
		}
		if asJSON && !all {
			return "", printJSON(w, meta.Body)
		}
		items = append(items, page...)
		if raw, err = appendRawItems(raw, meta.Body, field); err != nil {
			return "", err
		}
		next = nextCursor
		return nextCursor, nil
	})
	switch {
	case err != nil:
		return nil, "", false, err
	case asJSON && !all:
		return nil, "", true, nil
	case asJSON:
		return nil, "", true, printRawList(w, field, raw)
	}
	return items, next, false, nil
}

// eachPage calls fetch with cursor, then, when all is set, with each next
// cursor it returns until one is empty, at most maxPages times.
func eachPage(cursor string, all bool, fetch func(cursor string) (next string, err error)) error {
	for range maxPages {
		next, err := fetch(cursor)
		if err != nil || !all || next == "" {
			return err
		}
		if next == cursor {
			return fmt.Errorf("server returned cursor %q twice", next)
		}
		cursor = next
	}
	return fmt.Errorf("stopped after %d pages; continue with --cursor", maxPages)
}

// appendRawItems appends the items of a page's list field, as the server
// sent them.
func appendRawItems(items []json.RawMessage, body []byte, field string) ([]json.RawMessage, error) {
	var page map[string]json.RawMessage
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, fmt.Errorf("page: %w", err)
	}
	var list []json.RawMessage
	if b, ok := page[field]; ok {
		if err := json.Unmarshal(b, &list); err != nil {
			return nil, fmt.Errorf("page %s: %w", field, err)
		}
	}
	return append(items, list...), nil
}

// printRawList writes {"field": [items...]} indented.
func printRawList(w io.Writer, field string, items []json.RawMessage) error {
	if items == nil {
		items = []json.RawMessage{}
	}
	b, err := json.Marshal(map[string][]json.RawMessage{field: items})
	if err != nil {
		return err
	}
	return printJSON(w, b)
}

// printNextCursor tells the user how to get the next page.
func printNextCursor(w io.Writer, next string, all bool) {
	if next != "" && !all {
		fmt.Fprintf(w, "more: --cursor %s (or --all)\n", next)
	}
}

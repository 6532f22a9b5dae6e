package fsmtest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// classes are the sentinels a result's error is classified by, most
// specific first.
var classes = []error{
	fsm.ErrLimit, fsm.ErrInvalidEvent, fsm.ErrMalformed, fsm.ErrEventConflict, fsm.ErrUnknownJob,
	fsm.ErrJobExists, fsm.ErrUnknownRegion, fsm.ErrTenantMismatch, fsm.ErrPrecedesCreation,
	fsm.ErrTerminal, fsm.ErrIllegalTransition, fsm.ErrStaleFence, fsm.ErrUnknownWorkflow,
	fsm.ErrWorkflowExists, fsm.ErrUnknownWorker, fsm.ErrWorkerExists, fsm.ErrWorkerMismatch,
	fsm.ErrNotQueued, fsm.ErrOverQuota, fsm.ErrUnknownPolicy,
}

// Class names an error by its sentinels (every one it matches, in the
// order of classes) and, for transition and fence errors, their fields:
// two results agree if their classes are equal.
func Class(err error) string {
	if err == nil {
		return "nil"
	}
	var te *fsm.TransitionError
	if errors.As(err, &te) {
		return fmt.Sprintf("transition %s->%s by %s", te.From, te.To, te.Event)
	}
	var we *fsm.WorkflowTransitionError
	if errors.As(err, &we) {
		return fmt.Sprintf("workflow transition %s->%s by %s", we.From, we.To, we.Event)
	}
	var fe *fsm.FenceError
	if errors.As(err, &fe) {
		return fmt.Sprintf("stale fence %d < %d", fe.Fence, fe.Current)
	}
	var names []string
	for _, c := range classes {
		if errors.Is(err, c) {
			names = append(names, c.Error())
		}
	}
	if len(names) == 0 {
		return "other: " + err.Error()
	}
	return strings.Join(names, " + ")
}

// SameResults reports the first difference between two result lists.
func SameResults(got, want []fsm.Result) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d results, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Outcome != w.Outcome || g.Seq != w.Seq || Class(g.Err) != Class(w.Err) {
			return fmt.Errorf("event %d: got %s seq %d (%s: %v), want %s seq %d (%s)",
				i, g.Outcome, g.Seq, Class(g.Err), g.Err, w.Outcome, w.Seq, Class(w.Err))
		}
		if g.Type != w.Type || g.JobID != w.JobID {
			return fmt.Errorf("event %d: result names %s of job %q, want %s of job %q", i, g.Type, g.JobID, w.Type, w.JobID)
		}
	}
	return nil
}

// CompareWithModel checks every piece of the ledger's state against the
// model: jobs (field by field and by digest), the job list, the ledger
// digest, job histories, chain heads (and that every chain verifies),
// workflows and workers.
func CompareWithModel(t testing.TB, led *fsm.Ledger, m *Model) {
	t.Helper()
	if got := led.AppliedIndex(); got != m.Applied {
		t.Fatalf("applied index %d, model %d", got, m.Applied)
	}
	ids := m.JobIDs()
	states := make([]*fsm.JobState, len(ids))
	for i, id := range ids {
		want := m.Job(id)
		states[i] = want
		got, err := led.Job(want.Tenant, id)
		if err != nil {
			t.Fatalf("job %s: %v", id, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("job %s differs from the model:\n got  %+v\n want %+v", id, *got, *want)
		}
		gd, _ := got.Digest()
		wd, _ := want.Digest()
		if gd != wd {
			t.Fatalf("job %s digest %s, model %s", id, gd, wd)
		}
	}
	if n := countJobs(t, led); n != len(ids) {
		t.Fatalf("ledger lists %d jobs, model has %d", n, len(ids))
	}
	compareLists(t, led, states)
	gd, _, err := led.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if wd, _ := m.Digest(); gd != wd {
		t.Fatalf("ledger digest %s, model %s", gd, wd)
	}
	for _, id := range ids {
		compareHistory(t, led, m, id)
	}
	for _, tenant := range m.Tenants() {
		want := m.ChainHead(tenant)
		got, err := led.VerifyChain(tenant)
		if err != nil {
			t.Fatalf("verify chain of %q: %v", tenant, err)
		}
		if got != want {
			t.Fatalf("chain head of %q: %+v, model %+v", tenant, got, want)
		}
	}
	compareWorkflows(t, led, m)
	workers, err := led.Workers()
	if err != nil {
		t.Fatal(err)
	}
	if want := m.Workers(); !reflect.DeepEqual(workers, want) && len(workers)+len(want) > 0 {
		t.Fatalf("workers %+v, model %+v", workers, want)
	}
	compareMarks(t, led, m)
	comparePolicies(t, led, m)
	compareMeters(t, led, m)
}

// comparePolicies checks the governance records, as a list, per kind and
// one by one.
func comparePolicies(t testing.TB, led *fsm.Ledger, m *Model) {
	t.Helper()
	got, err := led.Policies("")
	if err != nil {
		t.Fatal(err)
	}
	want := m.Policies()
	if !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
		t.Fatalf("policies %+v, model %+v", got, want)
	}
	for _, kind := range []string{"quota", "throttle", "nothing"} {
		got, err := led.Policies(kind)
		if err != nil {
			t.Fatal(err)
		}
		var wk []*fsm.Policy
		for _, p := range want {
			if p.Kind == kind {
				wk = append(wk, p)
			}
		}
		if !reflect.DeepEqual(got, wk) && len(got)+len(wk) > 0 {
			t.Fatalf("policies of %s %+v, model %+v", kind, got, wk)
		}
	}
	for _, p := range want {
		if got, err := led.Policy(p.Kind, p.Key); err != nil || !reflect.DeepEqual(got, p) {
			t.Fatalf("policy %s/%s: %+v (%v), model %+v", p.Kind, p.Key, got, err, p)
		}
	}
	if got, err := led.Policy("quota", "absent"); err != nil || got != nil {
		t.Fatalf("absent policy: %+v (%v)", got, err)
	}
}

// compareMarks checks every forward mark, as a list and one by one (and
// a tenant without one).
func compareMarks(t testing.TB, led *fsm.Ledger, m *Model) {
	t.Helper()
	marks, err := led.ForwardMarks()
	if err != nil {
		t.Fatal(err)
	}
	want := m.ForwardMarks()
	if !reflect.DeepEqual(marks, want) {
		t.Fatalf("forward marks %v, model %v", marks, want)
	}
	want["nobody"] = 0
	for tenant, seq := range want {
		if got, err := led.ForwardMark(tenant); err != nil || got != seq {
			t.Fatalf("forward mark of %q: %d (%v), model %d", tenant, got, err, seq)
		}
	}
}

func countJobs(t testing.TB, led *fsm.Ledger) int {
	n, cursor := 0, ""
	for {
		page, err := led.ListJobs(fsm.JobQuery{Limit: 50, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Jobs)
		if page.Next == "" {
			return n
		}
		cursor = page.Next
	}
}

// compareLists pages through every tenant's jobs with every status and
// region filter (and a few filters over every tenant) and checks them
// against the model's states, which are in id order.
func compareLists(t testing.TB, led *fsm.Ledger, states []*fsm.JobState) {
	t.Helper()
	tenants := map[string]bool{"": true, "nobody": true}
	regions := map[string]bool{"": true, "zz9": true}
	for _, s := range states {
		tenants[s.Tenant] = true
		for _, r := range s.Regions {
			regions[r.Region] = true
		}
	}
	for tenant := range tenants {
		for region := range regions {
			for status := fsm.JobStatusUnknown; status <= fsm.JobStatusTimedOut; status++ {
				if tenant == "" && status != fsm.JobStatusRunning && status != fsm.JobStatusUnknown {
					continue // the scan over every tenant does not depend on the store
				}
				q := fsm.JobQuery{Tenant: tenant, Status: status, Region: region, Limit: 7}
				var want []string
				for _, s := range states {
					f := fsm.JobFilter{Tenant: tenant, Status: status, Region: region}
					if tenant == "" {
						f.Tenant = s.Tenant
					}
					if f.Matches(s) {
						want = append(want, s.JobID)
					}
				}
				if got := listIDs(t, led, q); !slices.Equal(got, want) {
					t.Fatalf("list %+v: %v, model %v", q, got, want)
				}
			}
		}
	}
}

func listIDs(t testing.TB, led *fsm.Ledger, q fsm.JobQuery) []string {
	t.Helper()
	var ids []string
	for {
		page, err := led.ListJobs(q)
		if err != nil {
			t.Fatalf("list %+v: %v", q, err)
		}
		for _, s := range page.Jobs {
			ids = append(ids, s.JobID)
		}
		if page.Next == "" {
			return ids
		}
		q.Cursor = page.Next
	}
}

// compareHistory pages through a job's events (7 at a time, to exercise
// cursors) and checks their order against the model's.
func compareHistory(t testing.TB, led *fsm.Ledger, m *Model, jobID string) {
	t.Helper()
	want := m.JobHistory(jobID)
	tenant := m.Job(jobID).Tenant
	var got []fsm.EventID
	cursor := ""
	for {
		page, err := led.JobEvents(fsm.EventQuery{Tenant: tenant, JobID: jobID, Limit: 7, Cursor: cursor})
		if err != nil {
			t.Fatalf("job %s events: %v", jobID, err)
		}
		for _, se := range page.Events {
			got = append(got, se.ID)
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("job %s history: %d events %v, model %d events %v", jobID, len(got), got, len(want), want)
	}
}

func compareWorkflows(t testing.TB, led *fsm.Ledger, m *Model) {
	t.Helper()
	byJob := map[string][]*fsm.WorkflowState{}
	for _, w := range m.Workflows() {
		byJob[w.JobID] = append(byJob[w.JobID], w)
	}
	for jobID, want := range byJob {
		var got []*fsm.WorkflowState
		cursor := ""
		for {
			page, err := led.Workflows(fsm.WorkflowQuery{Tenant: want[0].Tenant, JobID: jobID, Limit: 5, Cursor: cursor})
			if err != nil {
				t.Fatalf("workflows of %s: %v", jobID, err)
			}
			got = append(got, page.Workflows...)
			if page.Next == "" {
				break
			}
			cursor = page.Next
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("workflows of %s:\n got  %+v\n want %+v", jobID, got, want)
		}
	}
}

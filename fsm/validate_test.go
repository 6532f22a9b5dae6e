package fsm_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/hlc"
)

func TestValidate_NamesTheBrokenField(t *testing.T) {
	sample := func(i int) fsm.Event { return fsmtest.SampleEvents()[i] }
	created := func(mut func(*fsm.JobCreated)) fsm.Event {
		e := sample(0)
		b := *e.Body.(*fsm.JobCreated)
		b.Spec.Workflows = append([]fsm.WorkflowSpec(nil), b.Spec.Workflows...)
		mut(&b)
		e.Body = &b
		return e
	}
	for _, tc := range []struct {
		name  string
		event fsm.Event
		field string
		limit bool
	}{
		{"zero id", func() fsm.Event { e := sample(1); e.ID = fsm.EventID{}; return e }(), "id", false},
		{"unknown type", func() fsm.Event { e := sample(1); e.Type = 99; return e }(), "type", false},
		{"body of another type", func() fsm.Event { e := sample(1); e.Type = fsm.TypeJobFailed; return e }(), "body", false},
		{"missing body", func() fsm.Event { e := sample(1); e.Body = nil; return e }(), "body", false},
		{"zero hlc", func() fsm.Event { e := sample(1); e.HLC = hlc.Timestamp{}; return e }(), "hlc", false},
		{"bad region", func() fsm.Event { e := sample(1); e.Region = "US-East"; return e }(), "region", false},
		{"long region", func() fsm.Event { e := sample(1); e.Region = strings.Repeat("a", 17); return e }(), "region", true},
		{"empty node", func() fsm.Event { e := sample(1); e.Node = ""; return e }(), "node", false},
		{"bad job id", func() fsm.Event { e := sample(1); e.JobID = "job-1"; return e }(), "job_id", false},
		{"empty tenant", func() fsm.Event { e := sample(1); e.Tenant = ""; return e }(), "tenant", false},
		{"worker event with a job", func() fsm.Event { e := sample(15); e.JobID = fsmtest.SampleJobID; return e }(), "job_id", false},
		{"control event without fence", func() fsm.Event { e := sample(3); e.Fence = 0; return e }(), "fence", false},
		{"spec of another tenant", created(func(b *fsm.JobCreated) { b.Spec.Tenant = "globex" }), "spec.tenant", false},
		{"no regions", created(func(b *fsm.JobCreated) { b.Spec.Regions = nil }), "spec.regions", false},
		{"region twice", created(func(b *fsm.JobCreated) { b.Spec.Regions = []string{"use1", "use1"} }), "spec.regions", false},
		{"assigned region not in spec", created(func(b *fsm.JobCreated) { b.AssignedRegions = []string{"apse1"} }), "assigned_regions", false},
		{"no timeout", created(func(b *fsm.JobCreated) { b.Spec.Timeout = 0 }), "spec.timeout", false},
		{"no workflows", created(func(b *fsm.JobCreated) { b.Spec.Workflows = nil }), "spec.workflows", false},
		{"zero count", created(func(b *fsm.JobCreated) { b.Spec.Workflows[0].Count = 0 }), "spec.workflows.count", false},
		{"count over limit", created(func(b *fsm.JobCreated) { b.Spec.Workflows[0].Count = fsm.MaxWorkflowCount + 1 }), "spec.workflows.count", true},
		{"NaN rate", created(func(b *fsm.JobCreated) { b.Spec.Workflows[0].Rate = math.NaN() }), "spec.workflows.rate", false},
		{"failure ratio above 1", created(func(b *fsm.JobCreated) { b.Spec.Workflows[0].FailureRatio = 1.5 }), "spec.workflows.failure_ratio", false},
		{"workflow twice", created(func(b *fsm.JobCreated) { b.Spec.Workflows = append(b.Spec.Workflows, b.Spec.Workflows[0]) }), "spec.workflows", false},
		{"unsorted stats", func() fsm.Event {
			e := sample(2)
			b := *e.Body.(*fsm.JobProgressReported)
			b.Stats = fsm.Stats{{Name: "z", Value: 1}, {Name: "a", Value: 1}}
			e.Body = &b
			return e
		}(), "stats", false},
		{"reason not UTF-8", func() fsm.Event {
			e := sample(3)
			e.Body = &fsm.JobCancellationRequested{Reason: "\xff"}
			return e
		}(), "reason", false},
		{"workflow of another job", func() fsm.Event {
			e := sample(11)
			e.Body = &fsm.WorkflowCompleted{Workflow: "use1-1-gate1-00001/use1/x/1"}
			return e
		}(), "workflow", false},
		{"dispatch id not built from its fields", func() fsm.Event {
			e := sample(8)
			b := *e.Body.(*fsm.WorkflowDispatched)
			b.Instance++
			e.Body = &b
			return e
		}(), "workflow", false},
		{"lease without fence", func() fsm.Event {
			e := sample(9)
			b := *e.Body.(*fsm.WorkflowLeased)
			b.LeaseFence = 0
			e.Body = &b
			return e
		}(), "lease_fence", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.event.Validate()
			if !errors.Is(err, fsm.ErrInvalidEvent) {
				t.Fatalf("got %v, want ErrInvalidEvent", err)
			}
			var fe *fsm.FieldError
			var le *fsm.LimitError
			switch {
			case errors.As(err, &le):
				if !tc.limit || le.Field != tc.field {
					t.Fatalf("got limit error on %q, want field %q (limit %v)", le.Field, tc.field, tc.limit)
				}
			case errors.As(err, &fe):
				if tc.limit || fe.Field != tc.field {
					t.Fatalf("got field %q (%v), want %q", fe.Field, err, tc.field)
				}
			default:
				t.Fatalf("untyped error %v", err)
			}
		})
	}
}

package fsm

import (
	"errors"
	"math"
	"testing"
	"time"
)

// Finding 6 of issue 17: one submit cannot create unbounded work.
func TestCheckSubmit(t *testing.T) {
	wf := func(count uint32, d time.Duration, rate float64) WorkflowSpec {
		return WorkflowSpec{Name: "w", Count: count, Duration: Duration(d), Rate: rate}
	}
	regions := []string{"use1", "euw1"}
	many := make([]WorkflowSpec, 100)
	for i := range many {
		many[i] = wf(1_000, time.Minute, 10)
	}
	tests := []struct {
		name  string
		spec  JobSpec
		limit bool   // a *LimitError
		field string // a *FieldError on this field
	}{
		{"a modest job", JobSpec{Regions: regions, Timeout: Duration(time.Hour), Workflows: []WorkflowSpec{wf(4, time.Minute, 100)}}, false, ""},
		{"at the instance limit", JobSpec{Regions: regions, Timeout: Duration(time.Hour), Workflows: many[:50]}, false, ""},
		{"over the instance limit", JobSpec{Regions: regions, Timeout: Duration(time.Hour), Workflows: many}, true, ""},
		{"timeout over its limit", JobSpec{Regions: regions, Timeout: Duration(MaxJobTimeout + time.Second), Workflows: []WorkflowSpec{wf(1, time.Minute, 1)}}, false, "spec.timeout"},
		{"duration over its limit", JobSpec{Regions: regions, Timeout: Duration(time.Hour), Workflows: []WorkflowSpec{wf(1, MaxWorkflowDuration+time.Second, 1)}}, false, "spec.workflows[0].duration"},
		{"rate 1e308", JobSpec{Regions: regions, Timeout: Duration(time.Hour), Workflows: []WorkflowSpec{wf(1, time.Minute, 1e308)}}, false, "spec.workflows[0].rate"},
		{"rate +Inf", JobSpec{Regions: regions, Timeout: Duration(time.Hour), Workflows: []WorkflowSpec{wf(1, time.Minute, math.Inf(1))}}, false, "spec.workflows[0].rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.CheckSubmit()
			var le *LimitError
			var fe *FieldError
			switch {
			case tt.limit:
				if !errors.As(err, &le) || le.Limit != MaxWorkflowInstancesPerSubmit {
					t.Fatalf("got %v, want the instance limit", err)
				}
			case tt.field != "":
				if !errors.As(err, &fe) || fe.Field != tt.field {
					t.Fatalf("got %v, want a field error on %s", err, tt.field)
				}
			case err != nil:
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

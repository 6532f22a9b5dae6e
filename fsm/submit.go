package fsm

import (
	"fmt"
	"time"
)

// Bounds on the work one submit may create (DESIGN §13). They are checked
// where a client submits (CheckSubmit), not by Validate: Validate runs on
// every replica at apply, and a bound added there would refuse, on
// replay, jobs a cluster accepted before the bound existed.
const (
	// MaxWorkflowInstancesPerSubmit bounds workflows × count × regions of
	// one submit: each instance becomes events in a regional ledger.
	MaxWorkflowInstancesPerSubmit = 100_000
	// MaxJobTimeout bounds a job's timeout.
	MaxJobTimeout = 7 * 24 * time.Hour
	// MaxWorkflowDuration bounds one workflow's load duration.
	MaxWorkflowDuration = 24 * time.Hour
	// MaxWorkflowRate bounds one workflow's simulated requests per second.
	MaxWorkflowRate = 1_000_000
)

// CheckSubmit refuses a job spec that would make more work than one
// submit may: a *LimitError naming the bound, or a *FieldError. It does
// not repeat Validate's checks; a submit must pass both.
func (s *JobSpec) CheckSubmit() error {
	if time.Duration(s.Timeout) > MaxJobTimeout {
		return fieldErr("spec.timeout", fmt.Sprintf("%s is over the limit of %s", time.Duration(s.Timeout), MaxJobTimeout))
	}
	instances := 0
	for i := range s.Workflows {
		w := &s.Workflows[i]
		field := fmt.Sprintf("spec.workflows[%d]", i)
		if time.Duration(w.Duration) > MaxWorkflowDuration {
			return fieldErr(field+".duration", fmt.Sprintf("%s is over the limit of %s", time.Duration(w.Duration), MaxWorkflowDuration))
		}
		if w.Rate > MaxWorkflowRate {
			return fieldErr(field+".rate", fmt.Sprintf("%g is over the limit of %d per second", w.Rate, MaxWorkflowRate))
		}
		// Each factor is bounded (count by MaxWorkflowCount, regions by
		// MaxRegionsPerJob), so the sum cannot overflow before the check.
		instances += int(min(w.Count, MaxWorkflowCount)) * min(len(s.Regions), MaxRegionsPerJob)
		if instances > MaxWorkflowInstancesPerSubmit {
			return &LimitError{Field: "spec.workflows × count × regions", Limit: MaxWorkflowInstancesPerSubmit, Got: instances}
		}
	}
	return nil
}

package fsm

import (
	"slices"
	"strings"
)

// Bodies of jsonReader: one decoder per type, fields as the JSON tags of
// body_*.go name them (TestReadEventJSON_TakesTheUsualFormsOfEveryType
// fails if a field is missing here).

// body decodes the body of an event of type t; nil (and bad) for a type
// without a reader here, which encoding/json then decodes.
func (r *jsonReader) body(t EventType) Body {
	switch t {
	case TypeJobCreated:
		b := new(JobCreated)
		r.object(func(k []byte) int {
			f := field(k, "spec", "assigned_regions")
			switch f {
			case 0:
				r.jobSpec(&b.Spec)
			case 1:
				b.AssignedRegions = r.strings(slotRegion)
			}
			return f
		})
		return b
	case TypeJobAccepted:
		b := new(JobAccepted)
		r.object(func(k []byte) int {
			f := field(k, "region", "worker_count")
			switch f {
			case 0:
				b.Region = r.str(slotRegion)
			case 1:
				b.WorkerCount = uint32(r.uint(32))
			}
			return f
		})
		return b
	case TypeJobProgressReported:
		b := new(JobProgressReported)
		r.object(func(k []byte) int {
			f := field(k, "region", "completed", "failed", "stats", "done")
			switch f {
			case 0:
				b.Region = r.str(slotRegion)
			case 1:
				b.Completed = r.uint(64)
			case 2:
				b.Failed = r.uint(64)
			case 3:
				b.Stats = r.stats()
			case 4:
				b.Done = r.boolean()
			}
			return f
		})
		return b
	case TypeJobCancellationRequested:
		b := new(JobCancellationRequested)
		r.object(func(k []byte) int {
			return r.strings2(k, "reason", slotText, &b.Reason, "requestor", slotText, &b.Requestor)
		})
		return b
	case TypeJobCancellationAcked:
		b := new(JobCancellationAcked)
		r.object(func(k []byte) int {
			f := field(k, "region", "workflows_cancelled")
			switch f {
			case 0:
				b.Region = r.str(slotRegion)
			case 1:
				b.WorkflowsCancelled = uint32(r.uint(32))
			}
			return f
		})
		return b
	case TypeJobCompleted:
		b := new(JobCompleted)
		r.object(func(k []byte) int {
			f := field(k, "final_status", "aggregate")
			switch f {
			case 0:
				b.FinalStatus = r.str(slotName)
			case 1:
				r.aggregate(&b.Aggregate)
			}
			return f
		})
		return b
	case TypeJobFailed:
		b := new(JobFailed)
		r.object(func(k []byte) int {
			return r.strings2(k, "error", slotText, &b.Error, "failed_region", slotRegion, &b.FailedRegion)
		})
		return b
	case TypeJobTimedOut:
		b := new(JobTimedOut)
		r.object(func(k []byte) int {
			f := field(k, "timeout_type", "last_progress_hlc")
			switch f {
			case 0:
				b.TimeoutType = r.str(slotName)
			case 1:
				r.check(b.LastProgressHLC.UnmarshalText(r.text()))
			}
			return f
		})
		return b
	}
	return r.regionalBody(t)
}

// strings2 decodes a member of a body of two string fields, each read
// through its own string slot.
func (r *jsonReader) strings2(k []byte, name0 string, slot0 int, dst0 *string, name1 string, slot1 int, dst1 *string) int {
	f := field(k, name0, name1)
	switch f {
	case 0:
		*dst0 = r.str(slot0)
	case 1:
		*dst1 = r.str(slot1)
	}
	return f
}

func (r *jsonReader) aggregate(a *Aggregate) {
	r.object(func(k []byte) int {
		f := field(k, "completed", "failed", "stats")
		switch f {
		case 0:
			a.Completed = r.uint(64)
		case 1:
			a.Failed = r.uint(64)
		case 2:
			a.Stats = r.stats()
		}
		return f
	})
}

func (r *jsonReader) jobSpec(s *JobSpec) {
	r.object(func(k []byte) int {
		f := field(k, "tenant", "idempotency_key", "regions", "timeout", "workflows")
		switch f {
		case 0:
			s.Tenant = r.str(slotTenant)
		case 1:
			s.IdempotencyKey = r.str(slotText)
		case 2:
			s.Regions = r.strings(slotRegion)
		case 3:
			r.check(s.Timeout.UnmarshalText(r.text()))
		case 4:
			s.Workflows = []WorkflowSpec{} // [] decodes to an empty slice, not nil
			r.array(func() {
				s.Workflows = append(s.Workflows, WorkflowSpec{})
				r.workflowSpec(&s.Workflows[len(s.Workflows)-1])
			})
		}
		return f
	})
}

func (r *jsonReader) workflowSpec(w *WorkflowSpec) {
	r.object(func(k []byte) int {
		f := field(k, "name", "count", "duration", "rate", "failure_ratio")
		switch f {
		case 0:
			w.Name = r.str(slotName)
		case 1:
			w.Count = uint32(r.uint(32))
		case 2:
			r.check(w.Duration.UnmarshalText(r.text()))
		case 3:
			w.Rate = r.float64()
		case 4:
			w.FailureRatio = r.float64()
		}
		return f
	})
}

// strings reads an array of strings ([] is empty, not nil).
func (r *jsonReader) strings(slot int) []string {
	ss := []string{}
	r.array(func() { ss = append(ss, r.str(slot)) })
	return ss
}

// stats reads {"name": n, ...} as Stats.UnmarshalJSON does: sorted by
// name, nil when empty. A repeated name (encoding/json keeps the last) and
// more than MaxStats names leave the subset.
func (r *jsonReader) stats() Stats {
	if !r.expect('{') {
		return nil
	}
	if r.peek() == '}' {
		r.i++
		return nil
	}
	var s Stats
	for !r.bad && len(s) < MaxStats {
		name := r.text()
		r.expect(':')
		s = append(s, Stat{Name: string(name), Value: r.uint(64)})
		if !r.next('}') {
			break
		}
	}
	r.bad = r.bad || r.b[r.i-1] != '}'
	slices.SortFunc(s, func(a, b Stat) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(s); i++ {
		r.bad = r.bad || s[i].Name == s[i-1].Name
	}
	return s
}

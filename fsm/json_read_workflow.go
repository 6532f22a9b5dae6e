package fsm

// Workflow, worker and forwarder bodies of jsonReader.

func (r *jsonReader) regionalBody(t EventType) Body {
	switch t {
	case TypeWorkflowDispatched:
		b := new(WorkflowDispatched)
		r.object(func(k []byte) int {
			f := field(k, "workflow", "name", "instance", "spec")
			switch f {
			case 0:
				b.Workflow = r.str(slotWorkflow)
			case 1:
				b.Name = r.str(slotName)
			case 2:
				b.Instance = uint32(r.uint(32))
			case 3:
				r.workflowSpec(&b.Spec)
			}
			return f
		})
		return b
	case TypeWorkflowLeased:
		b := new(WorkflowLeased)
		r.object(func(k []byte) int {
			f := field(k, "workflow", "worker", "lease_until", "lease_fence")
			switch f {
			case 0:
				b.Workflow = r.str(slotWorkflow)
			case 1:
				b.Worker = r.str(slotWorker)
			case 2:
				b.LeaseUntilMs = r.int64()
			case 3:
				b.LeaseFence = r.uint(64)
			}
			return f
		})
		return b
	case TypeWorkflowProgress:
		b := new(WorkflowProgress)
		r.object(func(k []byte) int {
			f := field(k, "workflow", "completed", "failed", "stats")
			switch f {
			case 0:
				b.Workflow = r.str(slotWorkflow)
			case 1:
				b.Completed = r.uint(64)
			case 2:
				b.Failed = r.uint(64)
			case 3:
				b.Stats = r.stats()
			}
			return f
		})
		return b
	case TypeWorkflowCompleted:
		b := new(WorkflowCompleted)
		r.object(func(k []byte) int { return r.workflowOnly(k, &b.Workflow) })
		return b
	case TypeWorkflowCancelled:
		b := new(WorkflowCancelled)
		r.object(func(k []byte) int { return r.workflowOnly(k, &b.Workflow) })
		return b
	case TypeWorkflowFailed:
		b := new(WorkflowFailed)
		r.object(func(k []byte) int {
			return r.strings2(k, "workflow", slotWorkflow, &b.Workflow, "error", slotText, &b.Error)
		})
		return b
	case TypeWorkflowRescheduled:
		b := new(WorkflowRescheduled)
		r.object(func(k []byte) int {
			f := field(k, "workflow", "from_worker", "reason")
			switch f {
			case 0:
				b.Workflow = r.str(slotWorkflow)
			case 1:
				b.FromWorker = r.str(slotWorker)
			case 2:
				b.Reason = r.str(slotText)
			}
			return f
		})
		return b
	}
	return r.workerBody(t)
}

// workflowOnly decodes the member of a body whose only field is "workflow".
func (r *jsonReader) workflowOnly(k []byte, dst *string) int {
	f := field(k, "workflow")
	if f == 0 {
		*dst = r.str(slotWorkflow)
	}
	return f
}

func (r *jsonReader) workerBody(t EventType) Body {
	switch t {
	case TypeWorkerJoined:
		b := new(WorkerJoined)
		r.object(func(k []byte) int {
			f := field(k, "worker", "capacity")
			switch f {
			case 0:
				b.Worker = r.str(slotWorker)
			case 1:
				b.Capacity = uint32(r.uint(32))
			}
			return f
		})
		return b
	case TypeWorkerLeft:
		b := new(WorkerLeft)
		r.object(func(k []byte) int {
			return r.strings2(k, "worker", slotWorker, &b.Worker, "reason", slotText, &b.Reason)
		})
		return b
	case TypeForwardMark:
		b := new(ForwardMark)
		r.object(func(k []byte) int {
			f := field(k, "marks")
			if f == 0 {
				b.Marks = []ForwardPosition{} // [] decodes to an empty slice, not nil
				r.array(func() {
					b.Marks = append(b.Marks, ForwardPosition{})
					r.forwardPosition(&b.Marks[len(b.Marks)-1])
				})
			}
			return f
		})
		return b
	}
	return r.govBody(t)
}

func (r *jsonReader) forwardPosition(p *ForwardPosition) {
	r.object(func(k []byte) int {
		f := field(k, "tenant", "seq")
		switch f {
		case 0:
			p.Tenant = r.str(slotTenant)
		case 1:
			p.Seq = r.uint(64)
		}
		return f
	})
}

package fsm

import "testing"

// isWorkflowID answers what comparing with WorkflowID answers.
func TestIsWorkflowID_MatchesWorkflowID(t *testing.T) {
	const job, region, name = "use1-1700000000000-gate1-00001", "use1", "checkout"
	for _, tc := range []struct {
		name string
		id   string
	}{
		{"equal", WorkflowID(job, region, name, 42)},
		{"other instance", WorkflowID(job, region, name, 43)},
		{"instance with a leading zero", job + "/" + region + "/" + name + "/042"},
		{"instance 0", WorkflowID(job, region, name, 0)},
		{"a suffix more", WorkflowID(job, region, name, 42) + "/1"},
		{"instance cut", WorkflowID(job, region, name, 42)[:len(WorkflowID(job, region, name, 42))-1]},
		{"other name", WorkflowID(job, region, "browse", 42)},
		{"other region", WorkflowID(job, "euw1", name, 42)},
		{"empty", ""},
	} {
		for _, instance := range []uint32{0, 42, 4294967295} {
			want := tc.id == WorkflowID(job, region, name, instance)
			if got := isWorkflowID(tc.id, job, region, name, instance); got != want {
				t.Errorf("%s, instance %d: %v, want %v", tc.name, instance, got, want)
			}
		}
	}
}

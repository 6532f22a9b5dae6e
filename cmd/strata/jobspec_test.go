package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

func TestParseWorkflow(t *testing.T) {
	tests := []struct {
		name, in string
		want     fsm.WorkflowSpec
		wantErr  string
	}{
		{"all keys", "name=checkout,count=4,duration=30s,rate=200,failure_ratio=0.25",
			fsm.WorkflowSpec{Name: "checkout", Count: 4, Duration: fsm.Duration(30 * time.Second), Rate: 200, FailureRatio: 0.25}, ""},
		{"defaults", "name=w",
			fsm.WorkflowSpec{Name: "w", Count: defaultWorkflowCount, Duration: fsm.Duration(defaultWorkflowDuration), Rate: defaultWorkflowRate}, ""},
		{"spaces", " name=w , count=2", fsm.WorkflowSpec{Name: "w", Count: 2, Duration: fsm.Duration(defaultWorkflowDuration), Rate: defaultWorkflowRate}, ""},
		{"no name", "count=2", fsm.WorkflowSpec{}, "name is required"},
		{"not key=value", "name=w,4", fsm.WorkflowSpec{}, `"4" is not key=value`},
		{"count overflow", "name=w,count=4294967296", fsm.WorkflowSpec{}, "count"},
		{"bad duration", "name=w,duration=5", fsm.WorkflowSpec{}, "duration"},
		{"bad rate", "name=w,rate=fast", fsm.WorkflowSpec{}, "rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseWorkflow(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.in) {
					t.Fatalf("err = %v, want it to quote the input and contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseWorkflow = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// FuzzParseWorkflow: never panics; an accepted workflow has a name, and
// printing its fields back as flag syntax parses to the same workflow.
func FuzzParseWorkflow(f *testing.F) {
	f.Add("name=checkout,count=4,duration=30s,rate=200,failure_ratio=0")
	f.Add("name=,count=")
	f.Add("=,=,")
	f.Fuzz(func(t *testing.T, s string) {
		wf, err := parseWorkflow(s)
		if err != nil {
			return
		}
		if wf.Name == "" {
			t.Fatalf("accepted %q without a name", s)
		}
		if strings.ContainsAny(wf.Name, ",") || wf.Rate != wf.Rate || wf.FailureRatio != wf.FailureRatio {
			return // not expressible again in flag syntax, or NaN
		}
		again := fmt.Sprintf("name=%s,count=%d,duration=%s,rate=%v,failure_ratio=%v",
			strings.TrimSpace(wf.Name), wf.Count, time.Duration(wf.Duration), wf.Rate, wf.FailureRatio)
		back, err := parseWorkflow(again)
		if err != nil {
			t.Fatalf("re-parse of %q (from %q): %v", again, s, err)
		}
		if back.Name != strings.TrimSpace(wf.Name) || back.Count != wf.Count || back.Duration != wf.Duration ||
			back.Rate != wf.Rate || back.FailureRatio != wf.FailureRatio {
			t.Fatalf("round trip %q: %+v became %+v", s, wf, back)
		}
	})
}

// FuzzDecodeSpec: never panics, and an accepted spec encodes and decodes
// to itself.
func FuzzDecodeSpec(f *testing.F) {
	f.Add([]byte(`{"tenant":"acme","idempotency_key":"k1","regions":["use1","euw1"],"timeout":"10m","workflows":[{"name":"checkout","count":4,"duration":"30s","rate":200,"failure_ratio":0.0}]}`))
	f.Add([]byte(`{"tenant":"a"} {}`))
	f.Add([]byte(`{"timeout":5}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		spec, err := decodeSpec(b)
		if err != nil {
			return
		}
		enc, err := json.Marshal(spec)
		if err != nil {
			t.Fatalf("encode %+v: %v", spec, err)
		}
		back, err := decodeSpec(enc)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", enc, err)
		}
		enc2, _ := json.Marshal(back)
		if string(enc2) != string(enc) {
			t.Fatalf("round trip:\n%s\n%s", enc, enc2)
		}
	})
}

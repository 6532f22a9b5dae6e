package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// specFlags build a job spec from flags or a file.
type specFlags struct {
	tenant    string
	regions   []string
	timeout   time.Duration
	workflows []string
	key       string
	file      string
}

// defaultJobTimeout is --timeout's default: DESIGN §9's example.
const defaultJobTimeout = 10 * time.Minute

// maxSpecFileBytes is the API's request body limit (DESIGN §13): a bigger
// spec could not be submitted anyway.
const maxSpecFileBytes = 1 << 20

func (sf *specFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&sf.tenant, "tenant", "", "tenant id (required without -f)")
	fl.StringSliceVar(&sf.regions, "region", nil, "region to run in; repeat or comma-separate (required without -f)")
	fl.DurationVar(&sf.timeout, "timeout", defaultJobTimeout, "the job fails if not done within this")
	fl.StringArrayVar(&sf.workflows, "workflow", nil,
		"workflow name=NAME[,count=N][,duration=D][,rate=R][,failure_ratio=F]; repeat for several (defaults: "+workflowDefaults+")")
	fl.StringVar(&sf.key, "idempotency-key", "", "submitting the same key and spec again returns the same job (and makes the submit safe to retry on another node)")
	fl.StringVarP(&sf.file, "file", "f", "", "JSON job spec file, - for stdin (excludes --tenant, --region, --timeout, --workflow)")
}

// spec returns the job spec the flags describe; bad input is a usage error.
func (sf *specFlags) spec(cmd *cobra.Command) (*api.SubmitJobRequest, error) {
	var spec *api.SubmitJobRequest
	if sf.file != "" {
		for _, name := range []string{"tenant", "region", "timeout", "workflow"} {
			if cmd.Flags().Changed(name) {
				return nil, usageError{fmt.Errorf("-f and --%s exclude each other: put the field in the file", name)}
			}
		}
		s, err := readSpecFile(sf.file, cmd.InOrStdin())
		if err != nil {
			return nil, err
		}
		spec = s
	} else {
		s, err := sf.fromFlags()
		if err != nil {
			return nil, usageError{err}
		}
		spec = s
	}
	if sf.key != "" {
		spec.IdempotencyKey = sf.key
	}
	return spec, nil
}

func (sf *specFlags) fromFlags() (*api.SubmitJobRequest, error) {
	regions := splitList(sf.regions)
	switch {
	case sf.tenant == "":
		return nil, fmt.Errorf("--tenant is required (or give a spec with -f)")
	case len(regions) == 0:
		return nil, fmt.Errorf("--region is required (or give a spec with -f)")
	case len(sf.workflows) == 0:
		return nil, fmt.Errorf("--workflow is required, e.g. --workflow name=checkout,count=4 (or give a spec with -f)")
	case sf.timeout <= 0:
		return nil, fmt.Errorf("--timeout %s: must be positive", sf.timeout)
	}
	spec := &api.SubmitJobRequest{Tenant: sf.tenant, Regions: regions, Timeout: fsm.Duration(sf.timeout)}
	for _, w := range sf.workflows {
		wf, err := parseWorkflow(w)
		if err != nil {
			return nil, err
		}
		spec.Workflows = append(spec.Workflows, wf)
	}
	return spec, nil
}

// readSpecFile decodes a JSON job spec strictly: unknown fields (a typo)
// and trailing data are refused.
func readSpecFile(path string, stdin io.Reader) (*api.SubmitJobRequest, error) {
	r := stdin
	name := "stdin"
	if path != "-" {
		fh, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("job spec: %w", err)
		}
		defer fh.Close()
		r, name = fh, path
	}
	b, err := io.ReadAll(io.LimitReader(r, maxSpecFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("job spec %s: %w", name, err)
	}
	if len(b) > maxSpecFileBytes {
		return nil, usageError{fmt.Errorf("job spec %s: over the limit of %d bytes", name, maxSpecFileBytes)}
	}
	spec, err := decodeSpec(b)
	if err != nil {
		return nil, usageError{fmt.Errorf("job spec %s: %w", name, err)}
	}
	return spec, nil
}

// Defaults of the optional keys of --workflow.
const (
	defaultWorkflowCount    = 1
	defaultWorkflowDuration = 30 * time.Second
	defaultWorkflowRate     = 10
	workflowDefaults        = "count=1,duration=30s,rate=10,failure_ratio=0"
)

// parseWorkflow reads name=checkout,count=4,duration=30s,rate=200,
// failure_ratio=0. Only name is required; a key may appear once. Ranges
// (count <= 1,000, ratio in [0, 1], ...) are the server's to check.
func parseWorkflow(s string) (fsm.WorkflowSpec, error) {
	wf := fsm.WorkflowSpec{Count: defaultWorkflowCount, Duration: fsm.Duration(defaultWorkflowDuration), Rate: defaultWorkflowRate}
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return wf, fmt.Errorf("--workflow %q: %q is not key=value", s, kv)
		}
		if seen[k] {
			return wf, fmt.Errorf("--workflow %q: %s given twice", s, k)
		}
		seen[k] = true
		if err := setWorkflowField(&wf, k, v); err != nil {
			return wf, fmt.Errorf("--workflow %q: %w", s, err)
		}
	}
	if wf.Name == "" {
		return wf, fmt.Errorf("--workflow %q: name is required", s)
	}
	return wf, nil
}

func setWorkflowField(wf *fsm.WorkflowSpec, k, v string) error {
	switch k {
	case "name":
		wf.Name = v
	case "count":
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return fmt.Errorf("count %q: want a whole number", v)
		}
		wf.Count = uint32(n)
	case "duration":
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("duration %q: want a duration such as 30s", v)
		}
		wf.Duration = fsm.Duration(d)
	case "rate", "failure_ratio":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%s %q: want a number", k, v)
		}
		if k == "rate" {
			wf.Rate = f
		} else {
			wf.FailureRatio = f
		}
	default:
		return fmt.Errorf("unknown key %q (want name, count, duration, rate, failure_ratio)", k)
	}
	return nil
}

// decodeSpec reads one JSON job spec, refusing unknown fields and trailing
// data.
func decodeSpec(b []byte) (*api.SubmitJobRequest, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var spec api.SubmitJobRequest
	if err := dec.Decode(&spec); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	return &spec, nil
}

package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/transport/api"
)

func TestAntiEntropy_StatusAndRun(t *testing.T) {
	isolate(t)
	var methods []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		methods = append(methods, r.Method+" "+r.URL.Path)
		writeValue(w, http.StatusOK, api.AntiEntropyStatus{
			Pairs: []api.AntiEntropyPair{
				{Kind: "regional-global", Region: "use1", Group: "use1", Rounds: 4, RootsEqual: true, Differences: 1, Repaired: 1, Bytes: 1052},
				{Kind: "replica", Group: "global", Differences: 1},
			},
			DivergentReplicas: []string{"use1-gate2"}})
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	out, errOut, code := runCLI(t, "", "antientropy", "status", "--addr", addr, "--token", testToken)
	wantCode(t, code, exitOK, errOut)
	for _, want := range []string{"regional-global", "use1", "1052", "replica", "global", "divergent replicas: use1-gate2"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	out, errOut, code = runCLI(t, "", "antientropy", "run", "--addr", addr, "--token", testToken, "-o", "json")
	wantCode(t, code, exitOK, errOut)
	if !strings.Contains(out, `"divergent_replicas"`) {
		t.Fatalf("json output:\n%s", out)
	}
	if strings.Join(methods, ",") != "GET /v1/cluster/antientropy,POST /v1/cluster/antientropy/run" {
		t.Fatalf("requests %v", methods)
	}
}

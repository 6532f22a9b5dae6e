package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/strata-ledger/strata/transport/api"
)

// govFake answers the governance routes and records what it got.
func govFake(t *testing.T) (addr string, reqs func() []apiRequest) {
	t.Helper()
	var mu sync.Mutex
	var got []apiRequest
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, r *http.Request) {
		writeValue(w, http.StatusOK, api.GovernanceResponse{ID: r.PathValue("id"), WriteResponse: api.WriteResponse{Durability: "GLOBAL", Session: "global:9"}})
	}
	mux.HandleFunc("PUT /v1/quotas/policies/{id}", ok)
	mux.HandleFunc("DELETE /v1/quotas/policies/{id}", ok)
	mux.HandleFunc("PUT /v1/quotas/fleet", ok)
	mux.HandleFunc("POST /v1/throttles", ok)
	mux.HandleFunc("GET /v1/quotas/status", func(w http.ResponseWriter, r *http.Request) {
		writeValue(w, http.StatusOK, api.QuotaStatus{Tenant: r.URL.Query().Get("tenant"), Limits: []api.QuotaUsage{{Allowed: 2, Used: 2, Pending: 1}}})
	})
	mux.HandleFunc("GET /v1/quotas", func(w http.ResponseWriter, r *http.Request) {
		writeValue(w, http.StatusOK, api.QuotaList{Policies: []api.QuotaPolicy{{ID: "acme", Tenant: "acme", MaxActive: 2, Ticket: "T-1", Reason: "cap"}}})
	})
	mux.HandleFunc("POST /v1/jobs/{id}/replay", func(w http.ResponseWriter, r *http.Request) {
		writeValue(w, http.StatusCreated, api.ReplayResponse{JobID: "use1-1700000000001-gate1-00002", ReplayOf: r.PathValue("id"),
			WriteResponse: api.WriteResponse{Durability: "GLOBAL"}})
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, apiRequest{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, string(body), r.Header.Clone()})
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), func() []apiRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]apiRequest(nil), got...)
	}
}

func TestGovernanceCommands(t *testing.T) {
	isolate(t)
	addr, reqs := govFake(t)
	tests := []struct {
		name       string
		args       []string
		method     string
		path, body string
		out        string
	}{
		{"quota set of a job type", []string{"quota", "set", "acme:render", "--max-active", "2", "--max-per-hour", "60", "--reason", "cap", "--ticket", "T-1"},
			"PUT", "/v1/quotas/policies/acme:render",
			`{"tenant":"acme","job_type":"render","max_active":2,"max_per_hour":60,"reason":"cap","ticket":"T-1"}`, "id          acme:render"},
		{"quota delete", []string{"quota", "delete", "acme", "--reason", "done", "--ticket", "T-2"},
			"DELETE", "/v1/quotas/policies/acme", `{"reason":"done","ticket":"T-2"}`, "durability  GLOBAL"},
		{"quota fleet", []string{"quota", "fleet", "--capacity", "10", "--strategy", "reserved", "--reason", "plan", "--ticket", "T-3"},
			"PUT", "/v1/quotas/fleet", `{"capacity":10,"strategy":"reserved","reason":"plan","ticket":"T-3"}`, "durability"},
		{"quota status", []string{"quota", "status", "--tenant", "acme"}, "GET", "/v1/quotas/status", "", "acme"},
		{"quota list", []string{"quota", "list"}, "GET", "/v1/quotas", "", "T-1"},
		{"throttle pause", []string{"throttle", "pause", "--tenant", "acme", "--reason", "incident", "--ticket", "INC-7"},
			"POST", "/v1/throttles", `{"action":"pause","tenant":"acme","reason":"incident","ticket":"INC-7"}`, "durability"},
		{"job replay", []string{"job", "replay", testJobID, "--reason", "rerun"}, "POST", "/v1/jobs/" + testJobID + "/replay",
			`{"reason":"rerun"}`, "replay_of   " + testJobID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(reqs())
			out, errOut, code := runCLI(t, "", append(tt.args, "--addr", addr, "--token", testToken)...)
			wantCode(t, code, exitOK, errOut)
			all := reqs()
			if len(all) != before+1 {
				t.Fatalf("%d requests, want 1", len(all)-before)
			}
			r := all[len(all)-1]
			if r.Method != tt.method || r.Path != tt.path {
				t.Fatalf("request %s %s, want %s %s", r.Method, r.Path, tt.method, tt.path)
			}
			if tt.body != "" {
				sameJSON(t, r.Body, tt.body)
			}
			if !strings.Contains(out, tt.out) {
				t.Fatalf("stdout lacks %q:\n%s", tt.out, out)
			}
		})
	}
	// A change without its reason or ticket is a usage error that sends
	// nothing.
	before := len(reqs())
	for _, args := range [][]string{
		{"quota", "set", "acme", "--max-active", "1", "--ticket", "T"},
		{"throttle", "resume", "--tenant", "acme", "--reason", "r"},
	} {
		_, errOut, code := runCLI(t, "", append(args, "--addr", addr, "--token", testToken)...)
		if code != exitUsage || !strings.Contains(errOut, "required") {
			t.Fatalf("%v: exit %d, stderr %s", args, code, errOut)
		}
	}
	if n := len(reqs()); n != before {
		t.Fatalf("usage errors sent %d requests", n-before)
	}
}

package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/api"
)

// govAPI answers the governance calls with canned bodies and records
// what it was sent.
type govAPI struct {
	mu   sync.Mutex
	reqs []string // "METHOD path body"
	srv  *httptest.Server
}

func newGovAPI(t *testing.T) *govAPI {
	g := &govAPI{}
	mux := http.NewServeMux()
	record := func(r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		g.mu.Lock()
		g.reqs = append(g.reqs, r.Method+" "+r.URL.Path+" "+string(b))
		g.mu.Unlock()
	}
	mux.HandleFunc("GET /v1/breakers", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		writeValue(w, http.StatusOK, api.BreakerList{Region: "use1", Breakers: []api.Breaker{{Tenant: "acme", JobType: "render",
			State: "open", Since: 1_700_000_000_000, Why: "3 of the last 5 workflows failed", HLC: hlc.Timestamp{WallMs: 1}}}})
	})
	mux.HandleFunc("POST /v1/breakers/{tenant}/{type}/{action}", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		writeValue(w, http.StatusOK, api.BreakerChangeResponse{Breaker: api.Breaker{Tenant: r.PathValue("tenant"), JobType: r.PathValue("type"),
			State: map[string]string{"open": "open", "close": "closed"}[r.PathValue("action")], Forced: r.PathValue("action") == "open"},
			WriteResponse: api.WriteResponse{Durability: "REGIONAL", HLC: hlc.Timestamp{WallMs: 5}}})
	})
	mux.HandleFunc("POST /v1/maintenance", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		writeValue(w, http.StatusOK, api.MaintenanceResponse{Maintenance: api.MaintenanceStatus{Region: "use1", On: true, Since: 1_700_000_000_000,
			Reason: "upgrade", Ticket: "OPS-7", Requestor: "admin"}, WriteResponse: api.WriteResponse{Durability: "REGIONAL"}})
	})
	g.srv = httptest.NewServer(mux)
	t.Cleanup(g.srv.Close)
	return g
}

func TestBreakerAndMaintenanceCommands(t *testing.T) {
	isolate(t)
	tests := []struct {
		name    string
		args    []string
		code    int
		wantReq string // "" : nothing is sent
		wantOut string
	}{
		{"breaker list", []string{"breaker", "list"}, exitOK, "GET /v1/breakers ", "acme    render"},
		{"breaker open", []string{"breaker", "open", "acme", "render", "--reason", "bad build", "--ticket", "OPS-42"}, exitOK,
			`POST /v1/breakers/acme/render/open {"reason":"bad build","ticket":"OPS-42"}`, "breaker acme/render: open (forced true)"},
		{"breaker close", []string{"breaker", "close", "acme", "render", "--reason", "fixed", "--ticket", "OPS-42"}, exitOK,
			`POST /v1/breakers/acme/render/close {"reason":"fixed","ticket":"OPS-42"}`, "breaker acme/render: closed"},
		{"breaker open without a ticket", []string{"breaker", "open", "acme", "render", "--reason", "x"}, exitUsage, "", ""},
		{"maintenance on", []string{"maintenance", "on", "--region", "use1", "--reason", "upgrade", "--ticket", "OPS-7"}, exitOK,
			`POST /v1/maintenance {"region":"use1","on":true,"reason":"upgrade","ticket":"OPS-7"}`, "region use1: maintenance ON"},
		{"maintenance without a region", []string{"maintenance", "off", "--reason", "x", "--ticket", "y"}, exitUsage, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGovAPI(t)
			out, errOut, code := runCLI(t, "", append(tc.args, "--addr", g.srv.URL)...)
			wantCode(t, code, tc.code, errOut)
			g.mu.Lock()
			defer g.mu.Unlock()
			switch {
			case tc.wantReq == "" && len(g.reqs) != 0:
				t.Fatalf("a refused command sent %v", g.reqs)
			case tc.wantReq != "" && (len(g.reqs) != 1 || strings.TrimSpace(g.reqs[0]) != strings.TrimSpace(tc.wantReq)):
				t.Fatalf("sent %q, want %q", g.reqs, tc.wantReq)
			}
			if !strings.Contains(out, tc.wantOut) {
				t.Fatalf("stdout lacks %q:\n%s", tc.wantOut, out)
			}
		})
	}
}

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

// maintAPI answers the cluster-wide maintenance calls with canned bodies
// and records what it was sent.
func maintAPI(t *testing.T) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var reqs []string
	record := func(r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		reqs = append(reqs, r.Method+" "+r.URL.Path+" "+string(b))
		mu.Unlock()
	}
	at := hlc.Timestamp{WallMs: 1_700_000_000_000, Logical: 1, Node: 1}
	older := hlc.Timestamp{WallMs: 1_600_000_000_000, Node: 1}
	cluster := api.MaintenanceStatus{Scope: "cluster", On: true, Drain: true, Since: at.WallMs, Reason: "migration", Ticket: "OPS-9",
		Requestor: "admin", HLC: &at}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/maintenance/cluster", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		writeValue(w, http.StatusOK, api.MaintenanceResponse{Maintenance: cluster, WriteResponse: api.WriteResponse{Durability: "GLOBAL"}})
	})
	mux.HandleFunc("GET /v1/maintenance/cluster", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		stale := cluster
		stale.On, stale.Drain, stale.HLC = false, false, &older
		writeValue(w, http.StatusOK, api.ClusterMaintenanceStatus{Cluster: cluster, Regions: []api.MaintenanceStatus{
			{Scope: "region", Region: "apse1", Error: "no answer within 5s"},
			{Scope: "region", Region: "euw1", On: true, Since: at.WallMs, Requestor: "admin", Ticket: "OPS-7", Reason: "kernel", HLC: &older,
				Cluster: &stale, Effective: &api.MaintenanceEffect{On: true, By: []string{"region"}}},
			{Scope: "region", Region: "use1", Cluster: &cluster, Effective: &api.MaintenanceEffect{On: true, Drain: true, By: []string{"cluster"}}},
		}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), reqs...) }
}

func TestMaintenanceCommands_Cluster(t *testing.T) {
	isolate(t)
	tests := []struct {
		name    string
		args    []string
		code    int
		wantReq string // "": nothing is sent
		wantOut []string
	}{
		{"cluster on, draining", []string{"maintenance", "on", "--cluster", "--drain", "--reason", "migration", "--ticket", "OPS-9"}, exitOK,
			`POST /v1/maintenance/cluster {"on":true,"drain":true,"reason":"migration","ticket":"OPS-9"}`,
			[]string{"cluster: maintenance ON, draining", "strata maintenance status"}},
		{"cluster off", []string{"maintenance", "off", "--cluster", "--reason", "done", "--ticket", "OPS-9"}, exitOK,
			`POST /v1/maintenance/cluster {"on":false,"reason":"done","ticket":"OPS-9"}`, nil},
		{"both a region and the cluster", []string{"maintenance", "on", "--cluster", "--region", "use1", "--reason", "x", "--ticket", "y"},
			exitUsage, "", nil},
		{"off takes no drain", []string{"maintenance", "off", "--cluster", "--drain", "--reason", "x", "--ticket", "y"}, exitUsage, "", nil},
		{"status shows the cluster and every region", []string{"maintenance", "status"}, exitOK, "GET /v1/maintenance/cluster ", []string{
			"cluster: maintenance ON, draining",
			"region apse1: unknown (no answer within 5s)",
			"region euw1: maintenance ON: no new leases (since",
			"in effect: ON: no new leases (by region)",
			"cluster's mode as the region holds it: off",
			"(does not hold the cluster's current mode yet)",
			"region use1: maintenance off\n  cluster's mode as the region holds it: ON, draining",
			"in effect: ON, draining: no new leases, running workflows taken back (by cluster)",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, sent := maintAPI(t)
			out, errOut, code := runCLI(t, "", append(tc.args, "--addr", srv.URL)...)
			wantCode(t, code, tc.code, errOut)
			reqs := sent()
			switch {
			case tc.wantReq == "" && len(reqs) != 0:
				t.Fatalf("a refused command sent %v", reqs)
			case tc.wantReq != "" && (len(reqs) != 1 || strings.TrimSpace(reqs[0]) != strings.TrimSpace(tc.wantReq)):
				t.Fatalf("sent %q, want %q", reqs, tc.wantReq)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Fatalf("stdout lacks %q:\n%s", w, out)
				}
			}
			if tc.name == "status shows the cluster and every region" && strings.Count(out, "does not hold") != 1 {
				t.Fatalf("only euw1 lags the cluster's mode:\n%s", out)
			}
		})
	}
}

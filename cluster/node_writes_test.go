package cluster

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/strata-ledger/strata/transport/api"
)

// Issue 17 finding 9, end to end on real nodes: a write acknowledged at
// LOCAL names its NodeWAL record, and GET /v1/writes/{node}/{lsn} reads it
// at any node (forwarded to the one named), for its tenant's tokens only.
// (The refusal itself is injected in cluster/commit's
// TestFinding9_LocalAckedRefusalIsSurfaced: a real leader never refuses
// what its follower encoded.)
func TestNode_LocalAckedWriteNamesItsRecordAndItsStatusIsReadable(t *testing.T) {
	c := startTestCluster(t, 217)

	r := c.submitJob("g1", "?durability=local", "f9-local")
	if r.status != http.StatusCreated {
		t.Fatalf("LOCAL submit: %d %s", r.status, r.body)
	}
	var sub api.SubmitJobResponse
	r.decode(t, &sub)
	node, lsn, err := api.ParseWriteRef(sub.Write)
	if sub.Durability != "LOCAL" || err != nil || node != "g1" {
		t.Fatalf("LOCAL answer %+v: want durability LOCAL and a write on g1 (%v)", sub, err)
	}
	path := fmt.Sprintf("/v1/writes/%s/%d", node, lsn)

	for _, at := range []string{"g1", "g2", "m1"} { // m1, g2: forwarded to g1
		for _, token := range []string{testAcmeToken, testReaderToken, testAdminToken} {
			r := c.call(at, "GET", path, token, nil)
			if r.status != http.StatusOK {
				t.Fatalf("GET %s at %s: %d %s", path, at, r.status, r.body)
			}
			var st api.WriteStatus
			r.decode(t, &st)
			if st.Write != sub.Write || st.Node != "g1" || st.LSN != lsn || st.HLC != sub.HLC || len(st.Events) != 1 {
				t.Fatalf("status at %s: %+v, want write %s of one event at HLC %s", at, st, sub.Write, sub.HLC)
			}
			switch {
			case st.Status == api.WritePending && st.Durability == "LOCAL",
				st.Status == api.WriteReached && st.Durability == "GLOBAL":
			default:
				t.Fatalf("status at %s: %s at %s, want pending at LOCAL or reached at GLOBAL", at, st.Status, st.Durability)
			}
		}
	}

	// Another tenant's token, an LSN that holds nothing and an unknown
	// node: 404, never another tenant's write.
	for _, tc := range []struct{ at, path, token string }{
		{"g1", path, testGlobexToken},
		{"g2", path, testGlobexToken},
		{"g1", fmt.Sprintf("/v1/writes/g1/%d", lsn+1_000_000), testAdminToken},
		{"g1", "/v1/writes/nowhere/3", testAdminToken},
	} {
		r := c.call(tc.at, "GET", tc.path, tc.token, nil)
		if r.status != http.StatusNotFound || r.apiError(t).Code != api.CodeNotFound {
			t.Fatalf("GET %s at %s: %d %s, want 404", tc.path, tc.at, r.status, r.body)
		}
	}
	if e := c.call("g1", "GET", "/v1/writes/nowhere/3", testAdminToken, nil).apiError(t); e.Details["node"] != "nowhere" {
		t.Fatalf("unknown node's 404 does not name it: %+v", e)
	}
	if r := c.call("g1", "GET", "/v1/writes/g1/0", testAdminToken, nil); r.status != http.StatusBadRequest {
		t.Fatalf("LSN 0: %d %s, want 400", r.status, r.body)
	}

	// A write acknowledged at its tier has a session, and no write to look up.
	r = c.submitJob("g1", "", "f9-global")
	var global api.SubmitJobResponse
	r.decode(t, &global)
	if r.status != http.StatusCreated || global.Durability != "GLOBAL" || global.Write != "" || global.Session == "" {
		t.Fatalf("GLOBAL answer %d %+v: want a session and no write", r.status, global)
	}
}

package cluster

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/cluster/httpapi"
	"github.com/strata-ledger/strata/transport/api"
)

// The API calls the web console needs (issue 20): whoami, the region's
// workers in one call, the relay to another node, and /ui itself, on real
// nodes (subnet 143).
func TestConsoleAPI_WhoamiRelayWorkersAndUI(t *testing.T) {
	c := startTestCluster(t, 143)

	t.Run("whoami names the tenant and scopes", func(t *testing.T) {
		for _, tt := range []struct {
			name, token, tenant string
			scopes              []string
		}{
			{"operator", testAdminToken, "*", []string{"operator", "jobs:read", "jobs:write"}},
			{"reader", testReaderToken, "acme", []string{"jobs:read"}},
		} {
			r := c.call("m2", "GET", "/v1/auth/whoami", tt.token, nil)
			var who httpapi.Whoami
			if r.status != http.StatusOK || json.Unmarshal(r.body, &who) != nil {
				t.Fatalf("%s: %d %s", tt.name, r.status, r.body)
			}
			if who.Tenant != tt.tenant || !slices.Equal(who.Scopes, tt.scopes) || who.Node != "m2" || who.Role != "manager" || who.Region != "use1" {
				t.Errorf("%s: whoami %+v", tt.name, who)
			}
		}
		if r := c.call("g1", "GET", "/v1/auth/whoami", "", nil); r.status != http.StatusUnauthorized {
			t.Errorf("no token: %d %s", r.status, r.body)
		}
	})

	t.Run("relay reads another node's raft status", func(t *testing.T) {
		r := c.call("g1", "GET", "/v1/cluster/raft?node=m3", testAdminToken, nil)
		var st api.RaftStatus
		if r.status != http.StatusOK || json.Unmarshal(r.body, &st) != nil || st.Node != "m3" || st.Groups[0].Name != "use1" {
			t.Fatalf("relayed raft: %d %s", r.status, r.body)
		}
		// Through a node named in via, when the first does not know it.
		r = c.call("g1", "GET", "/v1/cluster/raft?node=nosuch&via=g2", testAdminToken, nil)
		if r.status != http.StatusNotFound {
			t.Errorf("unknown node through g2: %d %s", r.status, r.body)
		}
		if r := c.call("g1", "GET", "/v1/cluster/raft?node=m3", "", nil); r.status != http.StatusUnauthorized {
			t.Errorf("relay without a token: %d %s", r.status, r.body)
		}
		// The serving node checks the scope.
		if r := c.call("g1", "GET", "/v1/cluster/raft?node=m3", testReaderToken, nil); r.status != http.StatusForbidden {
			t.Errorf("relay for a reader: %d %s", r.status, r.body)
		}
		if r := c.call("g1", "POST", "/v1/jobs?node=m3", testAdminToken, nil); r.status != http.StatusBadRequest {
			t.Errorf("relayed POST: %d %s", r.status, r.body)
		}
	})

	t.Run("workers list on the region's leader", func(t *testing.T) {
		reg := c.call("g1", "POST", "/v1/workers", testAdminToken, []byte(`{"worker_id":"w-ui","region":"use1","capacity":3}`))
		if reg.status != http.StatusCreated {
			t.Fatalf("register: %d %s", reg.status, reg.body)
		}
		r := c.call("g2", "GET", "/v1/workers", testAdminToken, nil)
		var wl httpapi.WorkerList
		if r.status != http.StatusOK || json.Unmarshal(r.body, &wl) != nil {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		i := slices.IndexFunc(wl.Workers, func(w httpapi.ListedWorker) bool { return w.ID == "w-ui" })
		if wl.Region != "use1" || i < 0 || !wl.Workers[i].Active || wl.Workers[i].Capacity != 3 || wl.Backpressure != api.BackpressureNone {
			t.Errorf("workers %s", r.body)
		}
		if r := c.call("g2", "GET", "/v1/workers", testAcmeToken, nil); r.status != http.StatusForbidden {
			t.Errorf("a tenant's token lists workers: %d %s", r.status, r.body)
		}
	})

	t.Run("every node serves the console without a token", func(t *testing.T) {
		for _, path := range []string{"/ui", "/ui/", "/ui/app.js"} {
			r := c.call("m1", "GET", path, "", nil)
			if r.status != http.StatusOK || !strings.Contains(r.header.Get("Content-Security-Policy"), "default-src 'self'") {
				t.Errorf("%s: %d %v", path, r.status, r.header)
			}
		}
		if r := c.call("m1", "GET", "/ui/nosuch.js", "", nil); r.status != http.StatusNotFound {
			t.Errorf("unknown file: %d", r.status)
		}
	})
}

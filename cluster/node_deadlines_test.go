package cluster

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/httpapi"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Finding 5, the rest: every request's body and answer have deadlines
// (httpapi/deadline.go), which watch streams and lease long-polls extend
// for themselves. The deadlines are lowered to 100 ms on real nodes
// (subnet 221); where one must pass, the test waits a few.
func TestFinding5_RequestDeadlines(t *testing.T) {
	c := startTestCluster(t, 221)
	const lowered = 100 * time.Millisecond
	lower := func(to httpapi.Timeouts, nodes ...string) func() {
		for _, id := range nodes {
			c.node(id).api.SetTimeouts(to)
		}
		return func() {
			for _, id := range nodes {
				c.node(id).api.SetTimeouts(httpapi.Timeouts{})
			}
		}
	}

	t.Run("TricklingBody", func(t *testing.T) {
		defer lower(httpapi.Timeouts{Body: lowered}, "g1")()
		body := jobBody("acme", "trickled", "10m")
		conn, err := net.Dial("tcp", c.cfg("g1").HTTPAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := fmt.Fprintf(conn, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
			testAcmeToken, len(body)); err != nil {
			t.Fatal(err)
		}
		stop, trickled := make(chan struct{}), make(chan int)
		go func() {
			sent := 0
			defer func() { trickled <- sent }()
			tick := time.NewTicker(lowered / 5)
			defer tick.Stop()
			for ; sent < len(body); sent++ {
				if _, err := conn.Write(body[sent : sent+1]); err != nil {
					return
				}
				select {
				case <-tick.C:
				case <-stop:
					return
				}
			}
		}()
		// Another client is served meanwhile, its body in time.
		if r := c.submitJob("g1", "", "in-time"); r.status != http.StatusCreated {
			t.Fatalf("a submit beside the trickler: %d %s", r.status, r.body)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestTimeout {
				t.Fatalf("trickled submit: %d %s, want 408", resp.StatusCode, b)
			}
		}
		close(stop)
		t.Logf("trickler cut off after %d of %d bytes (read: %v)", <-trickled, len(body), err)
		if r := c.call("g1", "GET", "/v1/jobs?tenant=acme&consistency=strong", testAcmeToken, nil); strings.Contains(string(r.body), "trickled") {
			t.Fatalf("the trickled submit was taken: %s", r.body)
		}
	})

	t.Run("WatchOutlivesTheWriteDeadline", func(t *testing.T) {
		id, session := c.submitWatched(t, "watched-past-deadline")
		restore := lower(httpapi.Timeouts{Write: lowered}, "g1", "g2", "g3", "m1")
		gate := c.openWatch(t, "g1", id, testAcmeToken, api.HeaderSession, session)
		relayed := c.openWatch(t, "m1", id, testAcmeToken, api.HeaderSession, session) // manager → gate
		gateFirst, gateIndex := gate.next(t)
		relayedFirst, relayedIndex := relayed.next(t)
		time.Sleep(4 * lowered) // the ordinary write deadline passes
		restore()
		c.proposeJobEvent(t, id, 1, &fsm.JobAccepted{Region: "use1", WorkerCount: 1})
		running := func(s *fsm.JobState) bool { return s.Status == fsm.JobStatusRunning }
		gate.until(t, gateFirst, gateIndex, "accepted, past the write deadline", running)
		relayed.until(t, relayedFirst, relayedIndex, "accepted, relayed past the write deadline", running)
	})

	t.Run("LeasePollOutlivesTheWriteDeadline", func(t *testing.T) {
		lead := c.leader(RoleManager)
		if r := c.call(lead, "POST", "/v1/workers", testAdminToken, []byte(`{"worker_id":"w-deadline","region":"use1","capacity":1}`)); r.status/100 != 2 {
			t.Fatalf("register: %d %s", r.status, r.body)
		}
		defer lower(httpapi.Timeouts{Write: lowered}, "m1", "m2", "m3")()
		// An index no view reaches: the poll waits its whole wait, six
		// write deadlines, then answers.
		wait := 6 * lowered
		start := time.Now()
		r := c.call(lead, "GET", fmt.Sprintf("/v1/workers/w-deadline/leases?index=%d&wait=%s", uint64(1)<<62, wait), testAdminToken, nil)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"leases":[]`) {
			t.Fatalf("lease poll: %d %s", r.status, r.body)
		}
		if took := time.Since(start); took < wait {
			t.Fatalf("the poll answered after %s, before its wait of %s", took, wait)
		}
	})
}

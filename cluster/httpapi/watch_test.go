package httpapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/transport/api"
)

func TestWatch_AppendSSEReadsBack(t *testing.T) {
	for _, data := range []string{`{"a":1}`, "", "two\nlines", "\n\n"} {
		b := appendSSE(nil, "state", "42", []byte(data))
		ev, err := api.NewSSEReader(strings.NewReader(string(b))).Next()
		if err != nil || ev.Event != "state" || ev.ID != "42" || string(ev.Data) != data {
			t.Fatalf("%q: %+v %v", data, ev, err)
		}
	}
}

// Finding 8 of issue 17: one token cannot take every watch slot of a node.
func TestFinding8_WatchStreamsArePerTokenAndPerNode(t *testing.T) {
	var ws watchSet
	status := func(err error) int {
		var ae *httpx.APIError
		if errors.As(err, &ae) {
			return ae.Status
		}
		return 0
	}
	for i := range MaxWatchersPerToken {
		if err := ws.acquire("n1", "a"); err != nil {
			t.Fatalf("stream %d of token a: %v", i, err)
		}
	}
	if err := ws.acquire("n1", "a"); status(err) != http.StatusTooManyRequests {
		t.Fatalf("token a over its cap: %v, want 429", err)
	}
	if err := ws.acquire("n1", "b"); err != nil {
		t.Fatalf("token b is not held back by token a: %v", err)
	}
	ws.release("a")
	if err := ws.acquire("n1", "a"); err != nil {
		t.Fatalf("a released slot is reusable: %v", err)
	}
	ws.limit.Store(int64(MaxWatchersPerToken + 1)) // the node is full now
	if err := ws.acquire("n1", "c"); status(err) != http.StatusServiceUnavailable {
		t.Fatalf("a full node: %v, want 503", err)
	}
	for range MaxWatchersPerToken {
		ws.release("a")
	}
	ws.release("b")
	if ws.active.Load() != 0 || len(ws.byToken) != 0 {
		t.Fatalf("after every release: %d active, %v by token", ws.active.Load(), ws.byToken)
	}
}

package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/transport/api"
)

// The OpenAPI document (transport/api/openapi.json) against the mux: every
// public route the server registers is in the document with its methods,
// and the document names no route the server does not have. The nodes'
// own calls (/internal/*) and pprof are not part of the public API.

// undocumented are the patterns the document leaves out on purpose:
// node-to-node calls, profiles, and the console's static files (/ui: a
// web page, not an API).
func undocumented(pattern string) bool {
	return strings.HasPrefix(pattern, "/internal/") || strings.HasPrefix(pattern, "/debug/pprof/") ||
		pattern == "/ui" || strings.HasPrefix(pattern, "/ui/")
}

// fakePeers stands in for the node-to-node calls: only their routes matter.
type fakePeers struct{}

func (fakePeers) HTTPClient() *http.Client { return http.DefaultClient }
func (fakePeers) Routes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{"/internal/v1/propose": nil, "/internal/v1/deliver": nil}
}

// servedOperations are "METHOD pattern" of every public route, with the
// routes of fault injection (a flag turns them on: the document has them).
func servedOperations(t *testing.T) (ops map[string]bool, internal int) {
	t.Helper()
	sv := &Server{cfg: Config{EnableFaultInjection: true, Peers: fakePeers{}, Registry: prometheus.NewRegistry()}}
	_, table := sv.routeTable()
	ops = map[string]bool{}
	for _, r := range table {
		if undocumented(r.Pattern) {
			internal++
			continue
		}
		if len(r.Methods) == 0 {
			t.Errorf("route %s serves no method", r.Pattern)
		}
		for _, m := range r.Methods {
			ops[m+" "+r.Pattern] = true
		}
	}
	return ops, internal
}

// documentedOperations are "METHOD path" of every operation of the document.
func documentedOperations(t *testing.T, doc []byte) map[string]bool {
	t.Helper()
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatalf("the OpenAPI document is not JSON: %v", err)
	}
	methods := []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}
	ops := map[string]bool{}
	for path, item := range d.Paths {
		for key := range item {
			if slices.Contains(methods, key) {
				ops[strings.ToUpper(key)+" "+path] = true
			}
		}
	}
	return ops
}

// routeDiff is what one side has that the other lacks, sorted.
func routeDiff(served, documented map[string]bool) (missing, stale []string) {
	for op := range served {
		if !documented[op] {
			missing = append(missing, op)
		}
	}
	for op := range documented {
		if !served[op] {
			stale = append(stale, op)
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	return missing, stale
}

func TestOpenAPI_DescribesEveryRoute(t *testing.T) {
	served, internal := servedOperations(t)
	documented := documentedOperations(t, api.OpenAPI())
	missing, stale := routeDiff(served, documented)
	for _, op := range missing {
		t.Errorf("route %s is served but not in transport/api/openapi.json", op)
	}
	for _, op := range stale {
		t.Errorf("transport/api/openapi.json describes %s, which no route serves", op)
	}
	for _, op := range []string{"GET /v1/openapi.json", "GET /.well-known/openapi", "GET /livez", "GET /metrics", "POST /v1/jobs"} {
		if !served[op] || !documented[op] {
			t.Errorf("%s: served %v, documented %v", op, served[op], documented[op])
		}
	}
	t.Logf("%d operations served and documented; %d internal, pprof and console patterns left out", len(served)-len(missing), internal)
}

// The comparison itself: a route the document lacks and an operation no
// route serves are both found, and a wrong method counts as both.
func TestOpenAPI_RouteDiffFindsBothSides(t *testing.T) {
	served := map[string]bool{"GET /v1/jobs": true, "POST /v1/jobs": true, "GET /v1/new": true, "DELETE /v1/x/{id}": true}
	documented := map[string]bool{"GET /v1/jobs": true, "POST /v1/jobs": true, "GET /v1/gone": true, "POST /v1/x/{id}": true}
	missing, stale := routeDiff(served, documented)
	if want := []string{"DELETE /v1/x/{id}", "GET /v1/new"}; !slices.Equal(missing, want) {
		t.Errorf("missing = %v, want %v", missing, want)
	}
	if want := []string{"GET /v1/gone", "POST /v1/x/{id}"}; !slices.Equal(stale, want) {
		t.Errorf("stale = %v, want %v", stale, want)
	}
	// The document without one of its paths misses that route.
	var d map[string]any
	if err := json.Unmarshal(api.OpenAPI(), &d); err != nil {
		t.Fatal(err)
	}
	delete(d["paths"].(map[string]any), "/v1/jobs/{id}/watch")
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := servedOperations(t)
	if missing, _ := routeDiff(all, documentedOperations(t, b)); !slices.Equal(missing, []string{"GET /v1/jobs/{id}/watch"}) {
		t.Errorf("a document without the watch misses %v", missing)
	}
}

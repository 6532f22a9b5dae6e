package httpapi

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/strata-ledger/strata/transport/api"
)

// Hops a node signs are trusted by the next node, so the forward limit and
// loop check hold; hops a client forges, or that were changed on the way,
// count as none.
func TestHops_SignedAreTrustedForgedAreNot(t *testing.T) {
	const key = "cluster-secret-0123456789"
	received := func(req *http.Request) *http.Request { // as the next node parses it
		return httptest.NewRequest(req.Method, req.URL.RequestURI(), nil).WithContext(req.Context())
	}
	copyHeaders := func(dst, src *http.Request) *http.Request { dst.Header = src.Header.Clone(); return dst }

	out, _ := http.NewRequest("GET", "http://n2/v1/jobs/j1?consistency=strong", nil)
	signHops(out, []string{"m1", "g2"}, key)
	in := copyHeaders(received(out), out)
	if got := trustedHops(in, key); !slices.Equal(got, []string{"m1", "g2"}) {
		t.Fatalf("signed hops: %v", got)
	}
	if got := trustedHops(in, "another-key-0123456789"); got != nil {
		t.Fatalf("hops under another key: %v", got)
	}
	in.Header.Add(api.HeaderForwardedBy, "x") // one added on the way
	if got := trustedHops(in, key); got != nil {
		t.Fatalf("altered hops: %v", got)
	}
	moved := copyHeaders(httptest.NewRequest("GET", "/v1/jobs/j2", nil), out) // replayed on another path
	if got := trustedHops(moved, key); got != nil {
		t.Fatalf("hops replayed on another path: %v", got)
	}
	forged := httptest.NewRequest("GET", "/v1/jobs/j1", nil)
	forged.Header.Add(api.HeaderForwardedBy, "m1")
	if got := trustedHops(forged, key); got != nil {
		t.Fatalf("client-sent hops: %v", got)
	}
}

package cluster

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/cluster/httpapi"
	"github.com/strata-ledger/strata/transport/api"
)

// Finding 8, the rest: a chain verification recomputes at most
// httpapi.MaxVerifyEvents events (or the request's lower limit), and says
// where the next page starts; pages that follow each other verify the
// whole chain (subnet 221).
func TestFinding8_ChainVerifyIsBoundedAndPaged(t *testing.T) {
	c := startTestCluster(t, 221)
	const jobs, limit = 12, 5
	for i := range jobs {
		if r := c.submitJob("g1", "", fmt.Sprint("chain-", i)); r.status != http.StatusCreated {
			t.Fatalf("submit %d: %d %s", i, r.status, r.body)
		}
	}
	verify := func(query string) (api.ChainVerification, reply) {
		t.Helper()
		r := c.call("g1", "GET", "/v1/chain/verify?tenant=acme&consistency=strong"+query, testAcmeToken, nil)
		var v api.ChainVerification
		if r.status == http.StatusOK {
			r.decode(t, &v)
		}
		return v, r
	}
	whole, r := verify("")
	if r.status != http.StatusOK || !whole.Complete || whole.Seq < jobs || whole.Events != int(whole.Seq) || whole.Next != 0 {
		t.Fatalf("one page of the whole chain: %d %s", r.status, r.body)
	}
	var after uint64
	link, pages, events := "", 0, 0
	for {
		q := fmt.Sprintf("&limit=%d", limit)
		if after > 0 {
			q += fmt.Sprintf("&after=%d&link=%s", after, link)
		}
		v, r := verify(q)
		pages++
		if r.status != http.StatusOK || !v.Verified || v.After != after || v.Events > limit {
			t.Fatalf("page %d after %d: %d %s", pages, after, r.status, r.body)
		}
		events += v.Events
		if v.Complete {
			if v.Seq != whole.Seq || v.Link != whole.Link || events != int(whole.Seq) {
				t.Fatalf("pages ended at %d %s after %d events, the whole chain at %d %s", v.Seq, v.Link, events, whole.Seq, whole.Link)
			}
			break
		}
		if v.Next != v.Seq || v.Next <= after {
			t.Fatalf("page %d: next %d after %d: %s", pages, v.Next, after, r.body)
		}
		after, link = v.Next, v.Link
	}
	if want := (int(whole.Seq) + limit - 1) / limit; pages != want {
		t.Fatalf("%d events in pages of %d took %d pages, want %d", whole.Seq, limit, pages, want)
	}
	// The Go client follows the pages itself.
	cl, err := api.New(api.ClientConfig{Addrs: []string{c.cfg("g2").HTTPAddr}, Token: testAcmeToken})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := cl.VerifyChain(t.Context(), "acme", api.ReadOptions{Consistency: api.ConsistencyStrong}); err != nil || !v.Complete || v.Seq != whole.Seq {
		t.Fatalf("client: %+v %v", v, err)
	}

	// Refusals: a limit over the maximum names it; a link that is not the
	// stored one is a broken chain at the cursor; a cursor past the head.
	_, r = verify(fmt.Sprintf("&limit=%d", httpapi.MaxVerifyEvents+1))
	if ae := r.apiError(t); r.status != http.StatusBadRequest || ae.Details["limit"] != float64(httpapi.MaxVerifyEvents) {
		t.Fatalf("limit over the maximum: %d %s", r.status, r.body)
	}
	_, r = verify("&after=3&link=" + strings.Repeat("0", 64))
	if ae := r.apiError(t); r.status != http.StatusConflict || ae.Details["seq"] != float64(3) {
		t.Fatalf("a link other than the stored one: %d %s", r.status, r.body)
	}
	for _, q := range []string{fmt.Sprintf("&after=%d", whole.Seq+1), "&link=" + whole.Link, "&after=x", "&limit=0", "&link=zz"} {
		if _, r := verify(q); r.status != http.StatusBadRequest {
			t.Fatalf("%s: %d %s", q, r.status, r.body)
		}
	}
}

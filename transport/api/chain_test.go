package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
)

// chainServer answers chain verification pages of a 25-event chain, at
// most pageLimit events a page (a server's lowered MaxVerifyEvents); the
// link of event n is "l<n>", and the event brokenAt (0: none) is broken.
func chainServer(t *testing.T, pageLimit, brokenAt uint64) *recorder {
	const head = 25
	return newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		after, _ := strconv.ParseUint(q.Get(ParamAfter), 10, 64)
		if after > 0 && q.Get(ParamLink) != fmt.Sprint("l", after) {
			writeJSON(w, http.StatusBadRequest, ErrorEnvelope{Error: &Error{Code: CodeBadRequest, Message: "wrong link " + q.Get(ParamLink)}})
			return
		}
		last := min(after+pageLimit, head)
		if brokenAt > after && brokenAt <= last {
			writeJSON(w, http.StatusConflict, ErrorEnvelope{Error: &Error{Code: CodeConflict, Message: "broken",
				Details: map[string]any{"seq": brokenAt}}})
			return
		}
		out := ChainVerification{Tenant: q.Get("tenant"), Seq: last, Link: fmt.Sprint("l", last), Verified: true,
			After: after, Events: int(last - after), Complete: last == head}
		if !out.Complete {
			out.Next = last
		}
		writeJSON(w, http.StatusOK, out)
	})
}

// A chain longer than a page verifies in pages, each continuing from the
// link the one before verified; a broken link on a later page is the
// 409 of that page.
func TestClient_VerifyChainFollowsPages(t *testing.T) {
	rec := chainServer(t, 10, 0)
	c := newTestClient(t, ClientConfig{Addrs: []string{rec.srv.URL}})
	v, _, err := c.VerifyChain(context.Background(), "acme", ReadOptions{Consistency: ConsistencyEventual})
	if err != nil || !v.Verified || !v.Complete || v.Seq != 25 || v.Link != "l25" || v.Events != 25 || v.After != 0 {
		t.Fatalf("VerifyChain = %+v, %v", v, err)
	}
	var queries []string
	for _, s := range rec.requests() {
		queries = append(queries, s.Query)
	}
	want := []string{
		"consistency=eventual&tenant=acme",
		"after=10&consistency=eventual&link=l10&tenant=acme",
		"after=20&consistency=eventual&link=l20&tenant=acme",
	}
	if fmt.Sprint(queries) != fmt.Sprint(want) {
		t.Fatalf("pages asked:\n%q\nwant\n%q", queries, want)
	}

	broken := chainServer(t, 10, 23)
	c = newTestClient(t, ClientConfig{Addrs: []string{broken.srv.URL}})
	_, _, err = c.VerifyChain(context.Background(), "acme", ReadOptions{})
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != http.StatusConflict || ae.Details["seq"] != float64(23) || len(broken.requests()) != 3 {
		t.Fatalf("broken at 23: %v after %d pages", err, len(broken.requests()))
	}

	// One page, with a limit.
	p, _, err := c.VerifyChainPage(context.Background(), "acme", ChainPageOptions{After: 10, Link: "l10", Limit: 5}, ReadOptions{})
	if got := broken.last(t).Query; err != nil || got != "after=10&limit=5&link=l10&tenant=acme" || p.Next != 20 {
		t.Fatalf("page: %+v %v, query %q", p, err, got)
	}
	if _, _, err := c.VerifyChainPage(context.Background(), "acme", ChainPageOptions{Limit: -1}, ReadOptions{}); err == nil {
		t.Fatal("a negative limit was sent")
	}
}

// A server whose pages do not advance ends the verification with an error
// instead of a loop.
func TestClient_VerifyChainStopsWhenPagesDoNotAdvance(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, ChainVerification{Tenant: "acme", Seq: 0, Link: "l0", Verified: true, Next: 0})
	})
	c := newTestClient(t, ClientConfig{Addrs: []string{rec.srv.URL}})
	if _, _, err := c.VerifyChain(context.Background(), "acme", ReadOptions{}); err == nil || len(rec.requests()) != 1 {
		t.Fatalf("a page that did not advance: %v after %d pages", err, len(rec.requests()))
	}
}

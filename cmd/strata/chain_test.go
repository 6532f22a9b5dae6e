package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/bundle"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// chainServer answers GET /v1/chain/verify in two pages, or a 409 for
// tenant "broken" (a link that does not verify).
func chainServer(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case r.URL.Path != "/v1/chain/verify":
			writeAPIError(w, http.StatusNotFound, api.CodeNotFound, "no such endpoint")
		case q.Get("tenant") == "broken":
			writeAPIError(w, http.StatusConflict, api.CodeConflict, "chain of broken: link of seq 7 does not verify")
		case q.Get("after") == "":
			writeValue(w, http.StatusOK, api.ChainVerification{Tenant: "acme", Seq: 5, Link: "aa", Verified: true, Events: 5, Next: 5})
		case q.Get("after") == "5" && q.Get("link") == "aa":
			writeValue(w, http.StatusOK, api.ChainVerification{Tenant: "acme", Seq: 8, Link: "bb", Verified: true, After: 5, Events: 3, Complete: true})
		default:
			writeAPIError(w, http.StatusBadRequest, api.CodeBadRequest, "unexpected page "+r.URL.RawQuery)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestChainVerify_FollowsPagesToTheHead(t *testing.T) {
	isolate(t)
	addr := chainServer(t)
	out, errOut, code := runCLI(t, "", "chain", "verify", "--addr", addr, "--token", testToken, "--tenant", "acme")
	wantCode(t, code, exitOK, errOut)
	for _, want := range []string{"verified", "true", "events", "8", "head_seq", "bb"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestChainVerify_BrokenChainExitsOne(t *testing.T) {
	isolate(t)
	addr := chainServer(t)
	_, errOut, code := runCLI(t, "", "chain", "verify", "--addr", addr, "--token", testToken, "--tenant", "broken")
	wantCode(t, code, exitError, errOut)
	if !strings.Contains(errOut, "seq 7") {
		t.Fatalf("stderr does not name the broken link: %s", errOut)
	}
	_, errOut, code = runCLI(t, "", "chain", "verify", "--addr", addr, "--token", testToken)
	wantCode(t, code, exitUsage, errOut)
}

func TestChainProof_VerifiesHere(t *testing.T) {
	isolate(t)
	links := make([]fsm.Hash, 10)
	for i := range links {
		links[i][0] = byte(i + 1)
	}
	good := bundle.Proof{Seq: 4, Link: links[3], Path: bundle.InclusionPath(links, 3),
		Batch: bundle.Checkpoint{Tenant: "acme", FirstSeq: 1, LastSeq: 10, Root: bundle.MerkleRoot(links)}}
	bad := good
	bad.Link[5] ^= 1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("seq") == "4" {
			writeValue(w, http.StatusOK, good)
			return
		}
		writeValue(w, http.StatusOK, bad)
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	out, errOut, code := runCLI(t, "", "chain", "proof", "--addr", addr, "--token", testToken, "--tenant", "acme", "--seq", "4")
	wantCode(t, code, exitOK, errOut)
	if !strings.Contains(out, "verified") {
		t.Fatalf("out: %s", out)
	}
	_, errOut, code = runCLI(t, "", "chain", "proof", "--addr", addr, "--token", testToken, "--tenant", "acme", "--seq", "5")
	wantCode(t, code, exitError, errOut)
}

package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
		Batch: bundle.SignedCheckpoint{Checkpoint: bundle.Checkpoint{Tenant: "acme", FirstSeq: 1, LastSeq: 10, Root: bundle.MerkleRoot(links)}}}
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

// chain proof by event id checks the event's content against its link,
// the path against the root and, with --pubkey, the checkpoint's
// signature; a proof saved with -o json verifies offline with --file
// (no server), and a tampered one fails.
func TestChainProof_ByEventWithKeyAndOffline(t *testing.T) {
	dir := isolate(t)
	chain := testChain(t, 5, 80)[:10]
	links := make([]fsm.Hash, len(chain))
	for i, se := range chain {
		links[i] = se.Link
	}
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	ev := must(bundle.NewProofEvent(chain[3], chain[2].Link))
	cp := bundle.Checkpoint{Tenant: "acme", FirstSeq: 1, LastSeq: 10, LastLink: links[9], Root: bundle.MerkleRoot(links)}
	good := bundle.Proof{Seq: 4, Link: links[3], Path: bundle.InclusionPath(links, 3), Batch: bundle.SignCheckpoint(cp, key), Event: ev}
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.RawQuery)
		writeValue(w, http.StatusOK, good)
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	pubFile := filepath.Join(dir, "gates.pub")
	if err := os.WriteFile(pubFile, must(bundle.MarshalPublicKey(key.Public().(ed25519.PublicKey))), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "", "chain", "proof", "--addr", addr, "--token", testToken, "--tenant", "acme",
		"--event", chain[3].ID.String(), "--pubkey", pubFile, "-o", "json")
	wantCode(t, code, exitOK, errOut)
	if len(asked) != 1 || !strings.Contains(asked[0], "event="+chain[3].ID.String()) {
		t.Fatalf("asked %v", asked)
	}
	saved := filepath.Join(dir, "proof.json")
	if err := os.WriteFile(saved, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	out, errOut, code = runCLI(t, "", "chain", "proof", "--file", saved, "--pubkey", pubFile)
	wantCode(t, code, exitOK, errOut)
	if !strings.Contains(out, "link recomputed from the event") || !strings.Contains(out, bundle.KeyID(key.Public().(ed25519.PublicKey))) {
		t.Fatalf("offline: %s", out)
	}
	// Another key, and a tampered event: exit 1.
	other := filepath.Join(dir, "other.pub")
	otherKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, 32))
	if err := os.WriteFile(other, must(bundle.MarshalPublicKey(otherKey.Public().(ed25519.PublicKey))), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCLI(t, "", "chain", "proof", "--file", saved, "--pubkey", other)
	wantCode(t, code, exitError, errOut)
	bad := good
	badEv := *ev
	badEv.JobID += "x"
	bad.Event = &badEv
	tampered := filepath.Join(dir, "tampered.json")
	if err := os.WriteFile(tampered, must(json.Marshal(bad)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCLI(t, "", "chain", "proof", "--file", tampered)
	wantCode(t, code, exitError, errOut)
	for _, args := range [][]string{{"--file", saved, "--tenant", "acme", "--seq", "4"}, {"--tenant", "acme"}, {"--tenant", "acme", "--seq", "4", "--event", "x"}} {
		_, errOut, code = runCLI(t, "", append([]string{"chain", "proof"}, args...)...)
		wantCode(t, code, exitUsage, errOut)
	}
}

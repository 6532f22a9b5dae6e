package main

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/bundle"
	"github.com/strata-ledger/strata/transport/api"
)

// bundle export --sign KEYFILE re-signs the gate's export here (the
// file verifies with --pubkey of that key, its entries unchanged; NDJSON
// and a bad key file are refused before any call), and bundle import
// --pubkey FILE sends the key as the pubkey parameter (not with --force).
func TestBundleExportSign_ImportPubkey_AgainstTheAPI(t *testing.T) {
	dir := isolate(t)
	served := filepath.Join(dir, "served.bundle")
	writeTestBundle(t, served, testChain(t, 3, 60), false, nil)
	body := must(os.ReadFile(served))
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		switch {
		case r.Method == "GET" && r.URL.Path == "/v1/export":
			_, _ = w.Write(body)
		case r.Method == "POST" && r.URL.Path == "/v1/import":
			_, _ = io.Copy(io.Discard, r.Body)
			writeValue(w, http.StatusOK, api.ImportResponse{Tenant: "acme", Entries: 60, Verified: true})
		default:
			writeAPIError(w, http.StatusNotFound, api.CodeNotFound, "no")
		}
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	_, errOut, code := runCLI(t, "", "bundle", "keygen", "-o", filepath.Join(dir, "k"))
	wantCode(t, code, exitOK, errOut)
	key, pub := filepath.Join(dir, "k.key"), filepath.Join(dir, "k.pub")

	out := filepath.Join(dir, "signed.bundle")
	_, errOut, code = runCLI(t, "", "bundle", "export", "--addr", addr, "--token", testToken, "--tenant", "acme", "-o", out, "--sign", key)
	wantCode(t, code, exitOK, errOut)
	signed := must(os.ReadFile(out))
	pk := must(readPublicKey(pub))
	orig := must(bundle.Verify(bytes.NewReader(body), bundle.VerifyConfig{}))
	rep, err := bundle.Verify(bytes.NewReader(signed), bundle.VerifyConfig{PublicKey: pk})
	if err != nil || !rep.Trusted || rep.Entries != orig.Entries || rep.Entries == 0 {
		t.Fatalf("the signed export: %+v %v", rep, err)
	}
	if rep.Manifest.EntriesSHA256 != orig.Manifest.EntriesSHA256 || rep.Manifest.BundleID != orig.Manifest.BundleID {
		t.Fatal("signing changed the entries or the bundle id")
	}
	_, errOut, code = runCLI(t, "", "bundle", "verify", "--pubkey", pub, out)
	wantCode(t, code, exitOK, errOut)

	calls := len(queries)
	for _, bad := range [][]string{{"--sign", filepath.Join(dir, "none.key")}, {"--sign", pub}, {"--sign", key, "--format", "ndjson"}} {
		_, errOut, code = runCLI(t, "", append([]string{"bundle", "export", "--addr", addr, "--token", testToken, "--tenant", "acme",
			"-o", filepath.Join(dir, "x.bundle")}, bad...)...)
		wantCode(t, code, exitUsage, errOut)
	}
	if len(queries) != calls {
		t.Fatalf("a refused export called the API: %v", queries[calls:])
	}

	_, errOut, code = runCLI(t, "", "bundle", "import", "--addr", addr, "--token", testToken, "--pubkey", pub, out)
	wantCode(t, code, exitOK, errOut)
	want := "pubkey=" + strings.NewReplacer("+", "%2B", "/", "%2F", "=", "%3D").Replace(base64.StdEncoding.EncodeToString(pk))
	if last := queries[len(queries)-1]; !strings.HasPrefix(last, "POST /v1/import?") || !strings.Contains(last, want) {
		t.Fatalf("import sent %q, want %s", last, want)
	}
	_, errOut, code = runCLI(t, "", "bundle", "import", "--addr", addr, "--token", testToken, "--pubkey", pub, "--force", out)
	wantCode(t, code, exitUsage, errOut)
}

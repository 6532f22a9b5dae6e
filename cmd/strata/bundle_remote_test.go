package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/transport/api"
)

func TestBundleExportImport_AgainstTheAPI(t *testing.T) {
	dir := isolate(t)
	var imported []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET" && r.URL.Path == "/v1/export" && r.URL.Query().Get("tenant") == "acme":
			_, _ = io.WriteString(w, "BUNDLE-BYTES"+r.URL.Query().Get("from_hlc")+r.URL.Query().Get("to_hlc"))
		case r.Method == "POST" && r.URL.Path == "/v1/import":
			b, _ := io.ReadAll(r.Body)
			imported = append(imported, string(b)+"?"+r.URL.RawQuery)
			if string(b) == "BAD" {
				writeAPIError(w, http.StatusConflict, api.CodeConflict, "event 01 of the bundle differs from the one the ledger holds")
				return
			}
			writeValue(w, http.StatusOK, api.ImportResponse{Tenant: "acme", Entries: 4, Verified: true, Applied: 3, Duplicates: 1})
		default:
			writeAPIError(w, http.StatusNotFound, api.CodeNotFound, "no")
		}
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	out := filepath.Join(dir, "acme.bundle")
	_, errOut, code := runCLI(t, "", "bundle", "export", "--addr", addr, "--token", testToken, "--tenant", "acme", "-o", out)
	wantCode(t, code, exitOK, errOut)
	if b, err := os.ReadFile(out); err != nil || string(b) != "BUNDLE-BYTES" {
		t.Fatalf("exported file: %q %v", b, err)
	}
	// An HLC range goes to the API as from_hlc and to_hlc; a bad one is
	// refused before any call.
	ranged := filepath.Join(dir, "ranged.bundle")
	_, errOut, code = runCLI(t, "", "bundle", "export", "--addr", addr, "--token", testToken, "--tenant", "acme", "-o", ranged,
		"--from-hlc", "1700000000000:0:1", "--to-hlc", "1700000000999")
	wantCode(t, code, exitOK, errOut)
	if b, err := os.ReadFile(ranged); err != nil || string(b) != "BUNDLE-BYTES1700000000000:0:11700000000999" {
		t.Fatalf("ranged export: %q %v", b, err)
	}
	for _, bad := range [][]string{{"--from-hlc", "yesterday"}, {"--from-hlc", "5", "--to-hlc", "4"}, {"--to-hlc", "1:2"}} {
		_, errOut, code = runCLI(t, "", append([]string{"bundle", "export", "--addr", addr, "--token", testToken, "--tenant", "acme", "-o", ranged}, bad...)...)
		wantCode(t, code, exitUsage, errOut)
	}
	_, errOut, code = runCLI(t, "", "bundle", "export", "--addr", addr, "--token", testToken, "--tenant", "globex", "-o", filepath.Join(dir, "g.bundle"))
	wantCode(t, code, exitError, errOut)
	if _, err := os.Stat(filepath.Join(dir, "g.bundle")); err == nil {
		t.Fatal("a failed export left its file")
	}
	stdout, errOut, code := runCLI(t, "", "bundle", "import", "--addr", addr, "--token", testToken, "--force", out)
	wantCode(t, code, exitOK, errOut)
	if !strings.Contains(stdout, "acme") || !strings.Contains(stdout, "3") || imported[0] != "BUNDLE-BYTES?force=true" {
		t.Fatalf("import: %s (sent %v)", stdout, imported)
	}
	bad := filepath.Join(dir, "bad.bundle")
	if err := os.WriteFile(bad, []byte("BAD"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCLI(t, "", "bundle", "import", "--addr", addr, "--token", testToken, bad)
	wantCode(t, code, exitError, errOut)
	if !strings.Contains(errOut, "differs") {
		t.Fatalf("stderr: %s", errOut)
	}
}

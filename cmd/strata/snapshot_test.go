package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
	"github.com/strata-ledger/strata/transport/api"
)

// strata snapshot save writes what the node streams; inspect restores it
// into a scratch store, shows what it holds with the ledger's digest, and
// refuses a damaged file.
func TestSnapshot_SaveAndInspect(t *testing.T) {
	dir := isolate(t)
	led, err := fsm.New(fsm.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := led.Apply(1, fsmtest.JobsCreated(0, 25, "acme", "use1")); err != nil {
		t.Fatal(err)
	}
	var snap bytes.Buffer
	if err := led.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	want, _, err := led.Digest()
	if err != nil {
		t.Fatal(err)
	}
	var restored []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != "/v1/snapshot":
			writeAPIError(w, http.StatusNotFound, api.CodeNotFound, "no")
		case r.Method == http.MethodPost:
			restored, _ = io.ReadAll(r.Body)
			writeValue(w, http.StatusOK, api.RestoreResponse{Group: "global", SnapshotIndex: 1, Digest: want.String()})
		default:
			w.Header().Set(api.HeaderSnapshotGroup, "global")
			_, _ = w.Write(snap.Bytes())
		}
	}))
	t.Cleanup(srv.Close)
	file := filepath.Join(dir, "g1.snap")
	out, errOut, code := runCLI(t, "", "snapshot", "save", "--addr", strings.TrimPrefix(srv.URL, "http://"), "--token", testToken, "-o", file)
	wantCode(t, code, exitOK, errOut)
	if !strings.Contains(out, "group global") {
		t.Fatalf("save: %s", out)
	}
	out, errOut, code = runCLI(t, "", "snapshot", "inspect", file)
	wantCode(t, code, exitOK, errOut)
	for _, w := range []string{"applied_index", "jobs", "25", want.String(), "verified"} {
		if !strings.Contains(out, w) {
			t.Fatalf("inspect lacks %q:\n%s", w, out)
		}
	}
	out, errOut, code = runCLI(t, "", "snapshot", "restore", "--addr", strings.TrimPrefix(srv.URL, "http://"), "--token", testToken, file)
	wantCode(t, code, exitOK, errOut)
	if !bytes.Equal(restored, snap.Bytes()) || !strings.Contains(out, "restored to the snapshot at index 1") {
		t.Fatalf("restore sent %d bytes: %s", len(restored), out)
	}
	damaged := bytes.Clone(snap.Bytes())
	damaged[len(damaged)/2] ^= 1
	if err := os.WriteFile(file, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCLI(t, "", "snapshot", "inspect", file)
	wantCode(t, code, exitError, errOut)
}

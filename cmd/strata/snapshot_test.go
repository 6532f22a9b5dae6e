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

	"github.com/strata-ledger/strata/cluster/backup"
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
	var snap bytes.Buffer // as GET /v1/snapshot streams it: behind the group envelope
	if err := backup.WriteEnveloped(&snap, "global", 3, led.Snapshot); err != nil {
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
	wantRows(t, out, [][2]string{{"group", "global"}, {"index", "1"}, {"term", "3"}, {"jobs", "25"}, {"tenants", "1"},
		{"digest", want.String()}, {"checksum", "verified"}})
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

// wantRows checks that out holds each row: a line whose first field is
// the name and whose rest is the value.
func wantRows(t *testing.T, out string, rows [][2]string) {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			got[f[0]] = strings.Join(f[1:], " ")
		}
	}
	for _, r := range rows {
		if got[r[0]] != r[1] {
			t.Fatalf("inspect: %s is %q, want %q:\n%s", r[0], got[r[0]], r[1], out)
		}
	}
}

// A snapshot written before snapshots named their group (a bare ledger
// snapshot, v1) still inspects, showing no group; restore sends it as it
// is (the leader then asks for a group), and with --group behind an
// envelope naming that group and the snapshot's index. --group naming
// another group than an enveloped file's is refused without a call.
func TestSnapshot_BareV1FileInspectsAndRestoresWithGroup(t *testing.T) {
	dir := isolate(t)
	led, err := fsm.New(fsm.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := led.Apply(6, fsmtest.JobsCreated(0, 4, "acme", "use1")); err != nil {
		t.Fatal(err)
	}
	var bare bytes.Buffer
	if err := led.Snapshot(&bare); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "old.snap")
	if err := os.WriteFile(file, bare.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "", "snapshot", "inspect", file)
	wantCode(t, code, exitOK, errOut)
	wantRows(t, out, [][2]string{{"group", "- (none: written before snapshots named their group)"}, {"index", "6"}, {"term", "-"},
		{"jobs", "4"}, {"checksum", "verified"}})

	var got [][]byte
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		b, _ := io.ReadAll(r.Body)
		got = append(got, b)
		writeValue(w, http.StatusOK, api.RestoreResponse{Group: "use1", SnapshotIndex: 6})
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	_, errOut, code = runCLI(t, "", "snapshot", "restore", "--addr", addr, "--token", testToken, file)
	wantCode(t, code, exitOK, errOut)
	_, errOut, code = runCLI(t, "", "snapshot", "restore", "--addr", addr, "--token", testToken, "--group", "use1", file)
	wantCode(t, code, exitOK, errOut)
	if len(got) != 2 || !bytes.Equal(got[0], bare.Bytes()) {
		t.Fatalf("without --group the file was not sent as it is")
	}
	env, n, ok, err := backup.ReadEnvelope(bytes.NewReader(got[1]))
	if err != nil || !ok || env.Group != "use1" || env.Index != 6 || !bytes.Equal(got[1][n:], bare.Bytes()) {
		t.Fatalf("with --group: envelope %+v %v %v", env, ok, err)
	}

	enveloped := filepath.Join(dir, "global.snap")
	if err := os.WriteFile(enveloped, got[1], 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCLI(t, "", "snapshot", "restore", "--addr", addr, "--token", testToken, "--group", "global", enveloped)
	wantCode(t, code, exitError, errOut)
	if !strings.Contains(errOut, "is of group use1, not global") || calls != 2 {
		t.Fatalf("--group against the file's group: %d calls, %s", calls, errOut)
	}
}

package cluster

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/bundle"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// A tenant's chain exported from one cluster as a bundle verifies
// offline, and imported into a second cluster gives the same jobs with
// the same digests; importing it again changes nothing; a tampered
// bundle and one whose event differs from the ledger's are refused, and
// nothing of them is applied; overlapping bundles imported in either order
// give the same jobs. (Issue 15; subnets 249, 218 and 150.)
func TestBundle_ExportVerifyImport(t *testing.T) {
	a := startTestCluster(t, 249)
	ids := a.submitJobs(2)
	// An earlier export, which the later one holds whole.
	early := a.call("g3", "GET", "/v1/export?tenant=acme", testAcmeToken, nil)
	if early.status != http.StatusOK {
		t.Fatalf("early export: %d %s", early.status, early.body)
	}
	ids = append(ids, a.submitJobs(1)...)
	if r := a.call("g2", "POST", "/v1/jobs/"+ids[0]+"/cancel", testAcmeToken, []byte(`{"reason":"x"}`)); r.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	exp := a.call("g3", "GET", "/v1/export?tenant=acme", testAcmeToken, nil)
	if exp.status != http.StatusOK {
		t.Fatalf("export: %d %s", exp.status, exp.body)
	}
	rep, err := bundle.Verify(bytes.NewReader(exp.body), bundle.VerifyConfig{})
	if err != nil || rep.Entries != 4 || rep.Manifest.Tenant != "acme" {
		t.Fatalf("the export verifies offline: %+v %v", rep, err)
	}
	if r := a.call("g1", "GET", "/v1/export?tenant=globex", testAcmeToken, nil); r.status != http.StatusForbidden {
		t.Fatalf("export of another tenant: %d", r.status)
	}
	nd := a.call("g1", "GET", "/v1/export?tenant=acme&format=ndjson", testAcmeToken, nil)
	if lines := strings.Split(strings.TrimSpace(string(nd.body)), "\n"); nd.status != http.StatusOK || len(lines) != 5 ||
		!strings.HasPrefix(lines[4], `{"manifest"`) {
		t.Fatalf("ndjson export: %d %s", nd.status, nd.body)
	}

	b := startTestCluster(t, 218)
	imp := func(body []byte, query string) (reply, api.ImportResponse) {
		t.Helper()
		r := b.call("g1", "POST", "/v1/import"+query, testAdminToken, body)
		var out api.ImportResponse
		if r.status == http.StatusOK {
			r.decode(t, &out)
		}
		return r, out
	}
	if r, out := imp(exp.body, "?verify_only=true"); r.status != http.StatusOK || !out.Verified || out.Applied != 0 {
		t.Fatalf("verify only: %d %s", r.status, r.body)
	}
	if r := b.call("g1", "POST", "/v1/import", testAcmeToken, exp.body); r.status != http.StatusForbidden {
		t.Fatalf("import with a tenant token: %d", r.status)
	}
	tampered := bytes.Clone(exp.body)
	tampered[len(tampered)/2] ^= 1
	if r, _ := imp(tampered, ""); r.status != http.StatusBadRequest {
		t.Fatalf("tampered import: %d %s", r.status, r.body)
	}
	if r, out := imp(exp.body, ""); r.status != http.StatusOK || out.Applied != 4 || out.Duplicates != 0 {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	for _, id := range ids {
		want, err := a.node("g1").ledger.JobByID(id)
		if err != nil {
			t.Fatal(err)
		}
		b.waitFor("job "+id+" in the second cluster", func() bool {
			got, err := b.node("g1").ledger.JobByID(id)
			return err == nil && got.Events == want.Events
		})
		wd, _ := want.Digest()
		got, _ := b.node("g1").ledger.JobByID(id)
		if gd, _ := got.Digest(); gd != wd {
			t.Fatalf("job %s: digests differ between the clusters", id)
		}
	}
	if r, out := imp(exp.body, ""); r.status != http.StatusOK || out.Applied != 0 || out.Duplicates != 4 {
		t.Fatalf("second import: %d %s", r.status, r.body)
	}
	if r, out := imp(early.body, ""); r.status != http.StatusOK || out.Applied != 0 || out.Duplicates != 2 {
		t.Fatalf("the earlier export after the later one: %d %s", r.status, r.body)
	}
	// Overlapping bundles imported in the other order into a third
	// cluster (subnet 150) leave it with the same jobs and digests.
	cc := startTestCluster(t, 150)
	for _, body := range [][]byte{early.body, exp.body} {
		if r := cc.call("g1", "POST", "/v1/import", testAdminToken, body); r.status != http.StatusOK {
			t.Fatalf("import into the third cluster: %d %s", r.status, r.body)
		}
	}
	for _, id := range ids {
		cc.waitFor("job "+id+" in the third cluster", func() bool {
			got, err := cc.node("g1").ledger.JobByID(id)
			if err != nil {
				return false
			}
			want, _ := b.node("g1").ledger.JobByID(id)
			gd, _ := got.Digest()
			wd, _ := want.Digest()
			return gd == wd
		})
	}

	// A bundle whose cancel reason differs from the ledger's, with a new
	// job: a body conflict, and the new job is not applied either.
	var events []fsm.StoredEvent
	if _, err := bundle.Verify(bytes.NewReader(exp.body), bundle.VerifyConfig{OnEntry: func(e *bundle.Entry) error {
		events = append(events, *e.Stored)
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	var conflicting bytes.Buffer
	w, err := bundle.NewWriter(&conflicting, bundle.WriterConfig{Tenant: "acme", CreatedAt: time.Now(), CreatedBy: "test", Rechain: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		se := events[i]
		if c, ok := se.Body.(*fsm.JobCancellationRequested); ok {
			changed := *c
			changed.Reason = "another reason"
			se.Body = &changed
		}
		if err := w.Append(&se); err != nil {
			t.Fatal(err)
		}
	}
	extra := events[1] // a JobCreated under a new id and job
	extra.ID[0] ^= 0xff
	extra.JobID = "use1-1700000000000-other-00001"
	if err := w.Append(&extra); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if r, _ := imp(conflicting.Bytes(), ""); r.status != http.StatusConflict {
		t.Fatalf("conflicting import: %d %s", r.status, r.body)
	}
	if _, err := b.node("g1").ledger.JobByID(extra.JobID); err == nil {
		t.Fatal("a conflicting bundle's new job was applied")
	}
	reg := b.node("g1").reg
	for _, m := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"strata_bundle_imports_total", []string{"result", "applied"}, 3},
		{"strata_bundle_imports_total", []string{"result", "verified"}, 1},
		{"strata_bundle_imports_total", []string{"result", "refused"}, 1},
		{"strata_bundle_import_conflicts_total", nil, 1},
		{"strata_bundle_import_duplicates_total", nil, 6},
	} {
		if v := testkit.MetricValue(t, reg, m.name, m.labels...); v != m.want {
			t.Errorf("%s%v = %v, want %v", m.name, m.labels, v, m.want)
		}
	}
}

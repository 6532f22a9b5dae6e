package cluster

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
		{"strata_bundle_import_conflicts_total", []string{"kind", "body"}, 1},
		{"strata_bundle_import_duplicates_total", nil, 6},
	} {
		if v := testkit.MetricValue(t, reg, m.name, m.labels...); v != m.want {
			t.Errorf("%s%v = %v, want %v", m.name, m.labels, v, m.want)
		}
	}
}

// An import refused up front changes nothing: a force import skips a
// damaged manifest or signature but never a body conflict (409, nothing
// applied; counted as kind body, an event the apply rejects as kind
// rejected); an
// event whose HLC is too far ahead in the second batch of 500 refuses the
// whole bundle (the first batch is not applied); pubkey requires a
// signature by that key (403 for an unsigned or otherwise signed bundle,
// nothing applied). (Issue 15; subnet 73.)
func TestBundle_ImportRefusalsChangeNothing(t *testing.T) {
	c := startTestCluster(t, 73)
	c.submitJobs(1)
	exp := c.call("g1", "GET", "/v1/export?tenant=acme", testAcmeToken, nil)
	if exp.status != http.StatusOK {
		t.Fatalf("export: %d %s", exp.status, exp.body)
	}
	held := bundleEvents(t, exp.body)
	created := slices.IndexFunc(held, func(se fsm.StoredEvent) bool { _, ok := se.Body.(*fsm.JobCreated); return ok })
	if created < 0 {
		t.Fatal("no JobCreated in the export")
	}
	// newJob is a JobCreated the cluster does not hold (job i).
	newJob := func(i int) fsm.StoredEvent {
		se := held[created]
		se.ID[0] ^= 0xff
		se.ID[15] = byte(i)
		se.ID[14] = byte(i >> 8)
		se.JobID = fmt.Sprintf("use1-1700000000000-other-%05d", i)
		se.HLC.Logical += uint32(i)
		return se
	}
	imp := func(body []byte, query string) reply {
		t.Helper()
		return c.call("g2", "POST", "/v1/import"+query, testAdminToken, body)
	}
	// A refused import's jobs are checked at the end, once every gate
	// applied a later import (the log is in order): a gate may lag.
	var refused []string
	notApplied := func(what string, jobIDs ...string) {
		t.Helper()
		refused = append(refused, jobIDs...)
	}

	// A damaged manifest: refused, and applied with force.
	one := newJob(1)
	damaged := damageManifest(t, rebundle(t, append(slices.Clone(held), one), nil))
	if r := imp(damaged, ""); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "manifest") {
		t.Fatalf("damaged manifest: %d %s", r.status, r.body)
	}
	// (The forced import below applying it, not counting it a duplicate,
	// shows the refused one applied nothing.)
	var out api.ImportResponse
	if r := imp(damaged, "?force=true"); r.status != http.StatusOK {
		t.Fatalf("forced: %d %s", r.status, r.body)
	} else if r.decode(t, &out); out.Verified || out.Forced == "" || out.Applied != 1 || out.Duplicates != len(held) {
		t.Fatalf("forced: %s", r.body)
	}
	c.waitFor("the forced job", func() bool { _, err := c.node("g2").ledger.JobByID(one.JobID); return err == nil })

	// A damaged signature (one bit of the seal's signature): refused, and
	// applied with force.
	four := newJob(4)
	badSig := damageSignature(t, rebundle(t, append(slices.Clone(held), four), ed25519.NewKeyFromSeed(bytes.Repeat([]byte{5}, 32))))
	if r := imp(badSig, ""); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "signature") {
		t.Fatalf("damaged signature: %d %s", r.status, r.body)
	}
	if r := imp(badSig, "?force=true"); r.status != http.StatusOK {
		t.Fatalf("forced signature: %d %s", r.status, r.body)
	} else if r.decode(t, &out); out.Verified || out.Applied != 1 {
		t.Fatalf("forced signature: %s", r.body)
	}

	// A JobCreated of a job the ledger holds, under a new event id: the
	// apply rejects it (a conflict of kind rejected), the import answers.
	again := held[created]
	again.ID[0] ^= 0x0f
	again.HLC.Logical += 7
	if r := imp(rebundle(t, append(slices.Clone(held), again), nil), ""); r.status != http.StatusOK {
		t.Fatalf("a job created twice: %d %s", r.status, r.body)
	} else if r.decode(t, &out); out.Rejected != 1 || out.Applied != 0 {
		t.Fatalf("a job created twice: %s", r.body)
	}

	// A body conflict with force: 409, and its new job is not applied.
	two := newJob(2)
	conflicting := append(slices.Clone(held), two)
	body := *conflicting[created].Body.(*fsm.JobCreated)
	body.Spec.Priority++
	conflicting[created].Body = &body
	if r := imp(damageManifest(t, rebundle(t, conflicting, nil)), "?force=true"); r.status != http.StatusConflict {
		t.Fatalf("forced conflict: %d %s", r.status, r.body)
	}
	notApplied("forced conflict", two.JobID)

	// 501 new jobs, the last (in HLC order) too far ahead: refused before
	// the first batch of 500 is submitted.
	var many []fsm.StoredEvent
	var manyIDs []string
	for i := 10; i < 10+importBatchEventsForTest+1; i++ {
		se := newJob(i)
		many = append(many, se)
		manyIDs = append(manyIDs, se.JobID)
	}
	many[len(many)-1].HLC.WallMs = time.Now().Add(24 * time.Hour).UnixMilli()
	if r := imp(rebundle(t, many, nil), ""); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "hlc") {
		t.Fatalf("skewed import: %d %s", r.status, r.body)
	}
	notApplied("skewed import", manyIDs...)

	// pubkey: a bundle must be signed by that key.
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{4}, 32))
	pub := key.Public().(ed25519.PublicKey)
	three := newJob(3)
	set := append(slices.Clone(held), three)
	hexKey, b64Key := "?pubkey="+hex.EncodeToString(pub), "?pubkey="+url.QueryEscape(base64.StdEncoding.EncodeToString(pub))
	for name, tc := range map[string]struct {
		body   []byte
		query  string
		status int
	}{
		"unsigned":       {rebundle(t, set, nil), hexKey, http.StatusForbidden},
		"another key":    {rebundle(t, set, other), b64Key, http.StatusForbidden},
		"malformed key":  {rebundle(t, set, key), "?pubkey=abc", http.StatusBadRequest},
		"key with force": {rebundle(t, set, key), hexKey + "&force=true", http.StatusBadRequest},
	} {
		if r := imp(tc.body, tc.query); r.status != tc.status {
			t.Fatalf("%s: %d %s", name, r.status, r.body)
		}
	}
	// The signed import applying job three (not a duplicate) shows that
	// none of the refused ones did.
	if r := imp(rebundle(t, set, key), b64Key); r.status != http.StatusOK {
		t.Fatalf("signed by the key: %d %s", r.status, r.body)
	} else if r.decode(t, &out); out.Applied != 1 || !out.Verified {
		t.Fatalf("signed by the key: %s", r.body)
	}
	for _, g := range []string{"g1", "g2", "g3"} {
		c.waitFor("the signed import at "+g, func() bool { _, err := c.node(g).ledger.JobByID(three.JobID); return err == nil })
		for _, id := range refused {
			if _, err := c.node(g).ledger.JobByID(id); err == nil {
				t.Fatalf("job %s of a refused import was applied (at %s)", id, g)
			}
		}
	}
	reg := c.node("g2").reg
	if v := testkit.MetricValue(t, reg, "strata_bundle_import_conflicts_total", "kind", "body"); v != 1 {
		t.Errorf("body conflicts: %v", v)
	}
	if v := testkit.MetricValue(t, reg, "strata_bundle_import_conflicts_total", "kind", "rejected"); v != 1 {
		t.Errorf("rejected: %v", v)
	}
	// The export was served by whichever gate answered it (a read may go
	// to the leader).
	var timed float64
	for _, g := range []string{"g1", "g2", "g3"} {
		timed += exportsTimed(t, c.node(g).reg)
	}
	if v := timed; v != 1 {
		t.Errorf("exports timed: %v", v)
	}
}

// importBatchEventsForTest is httpapi's importBatchEvents: the skew test
// needs a bundle of more than one batch.
const importBatchEventsForTest = 500

// bundleEvents are the events of a bundle that verifies.
func bundleEvents(t *testing.T, b []byte) []fsm.StoredEvent {
	t.Helper()
	var events []fsm.StoredEvent
	if _, err := bundle.Verify(bytes.NewReader(b), bundle.VerifyConfig{OnEntry: func(e *bundle.Entry) error {
		events = append(events, *e.Stored)
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	return events
}

// rebundle writes events as a bundle of tenant acme with a chain of its
// own (signed by signer, if set).
func rebundle(t *testing.T, events []fsm.StoredEvent, signer ed25519.PrivateKey) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := bundle.NewWriter(&buf, bundle.WriterConfig{Tenant: "acme", CreatedAt: time.Now(), CreatedBy: "test", Rechain: true, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		if err := w.Append(&events[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// damageManifest changes the created_by of b's manifest (same length,
// frame checksum fixed), so the manifest no longer matches the digest
// its seal carries: a manifest failure, which force skips.
func damageManifest(t *testing.T, b []byte) []byte {
	t.Helper()
	b = bytes.Clone(b)
	start := bytes.LastIndex(b, []byte(`{"format":`))
	i := bytes.Index(b[start:], []byte(`"created_by":"test"`))
	if start < 5 || i < 0 {
		t.Fatal("no manifest to damage")
	}
	copy(b[start+i:], `"created_by":"tost"`)
	n := int(binary.LittleEndian.Uint32(b[start-4:]))
	crc := crc32.Checksum(b[start-5:start+n], crc32.MakeTable(crc32.Castagnoli))
	binary.LittleEndian.PutUint32(b[start+n:], crc)
	return b
}

// damageSignature flips one bit of the signature in b's seal (frame
// checksum fixed): the seal no longer verifies, a signature failure,
// which force skips.
func damageSignature(t *testing.T, b []byte) []byte {
	t.Helper()
	b = bytes.Clone(b)
	start := bytes.LastIndex(b, []byte(`{"payloadType":`))
	i := bytes.Index(b[start:], []byte(`"sig":"`))
	if start < 5 || i < 0 {
		t.Fatalf("no seal signature to damage")
	}
	at := start + i + len(`"sig":"`) + 2
	b[at] = map[bool]byte{true: 'B', false: 'A'}[b[at] == 'A']
	n := int(binary.LittleEndian.Uint32(b[start-4:]))
	binary.LittleEndian.PutUint32(b[start+n:], crc32.Checksum(b[start-5:start+n], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// exportsTimed is the sample count of
// strata_bundle_export_duration_seconds{format="bundle"} in reg (0 when
// the gate served no export).
func exportsTimed(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "strata_bundle_export_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "format" && l.GetValue() == "bundle" {
					return float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return 0
}

// Two clusters each with jobs of their own: each one's export imported
// into the other (so one applies A's events then B's, the other B's then
// A's) leaves both with every job of both, in equal states with equal
// digests; importing both again, in the other order, changes nothing.
// (Issue 15; subnets 74 and 75.)
func TestBundle_TwoClustersImportedInEitherOrder(t *testing.T) {
	a := startTestCluster(t, 74)
	idsA := a.submitJobs(2)
	if r := a.call("g2", "POST", "/v1/jobs/"+idsA[0]+"/cancel", testAcmeToken, []byte(`{"reason":"a"}`)); r.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	b := startTestCluster(t, 75)
	idsB := b.submitJobs(3)
	export := func(c *testCluster) []byte {
		t.Helper()
		r := c.call("g1", "GET", "/v1/export?tenant=acme", testAcmeToken, nil)
		if r.status != http.StatusOK {
			t.Fatalf("export: %d %s", r.status, r.body)
		}
		return r.body
	}
	expA, expB := export(a), export(b)
	imp := func(c *testCluster, body []byte, wantApplied int) {
		t.Helper()
		r := c.call("g1", "POST", "/v1/import", testAdminToken, body)
		var out api.ImportResponse
		if r.status == http.StatusOK {
			r.decode(t, &out)
		}
		if r.status != http.StatusOK || out.Applied != wantApplied || out.Rejected != 0 {
			t.Fatalf("import: %d %s", r.status, r.body)
		}
	}
	nA, nB := len(bundleEvents(t, expA)), len(bundleEvents(t, expB))
	imp(a, expB, nB) // A: its own events, then B's
	imp(b, expA, nA) // B: its own events, then A's
	imp(a, expA, 0)  // and again, in the other order: nothing new
	imp(b, expB, 0)
	for _, id := range append(slices.Clone(idsA), idsB...) {
		for _, c := range []*testCluster{a, b} {
			c.waitFor("job "+id+" at every gate", func() bool {
				for _, g := range []string{"g1", "g2", "g3"} {
					if _, err := c.node(g).ledger.JobByID(id); err != nil {
						return false
					}
				}
				return true
			})
		}
		// Every gate of each cluster holds it; compare the two g1s.
		a.waitFor("job "+id+" equal in both clusters", func() bool {
			ja, errA := a.node("g1").ledger.JobByID(id)
			jb, errB := b.node("g1").ledger.JobByID(id)
			if errA != nil || errB != nil || ja.Events != jb.Events || ja.Status != jb.Status {
				return false
			}
			da, _ := ja.Digest()
			db, _ := jb.Digest()
			return da == db
		})
	}
	ja, _ := a.node("g1").ledger.JobByID(idsA[0])
	if ja.Status != fsm.JobStatusCancelling && ja.Status != fsm.JobStatusCancelled {
		t.Fatalf("job %s: status %v, want its cancellation", idsA[0], ja.Status)
	}
}

package fsm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// readFixture holds five acme jobs (statuses and regions vary) and two
// globex jobs.
func readFixture(t *testing.T, maxScan int) (*fsm.Ledger, []string) {
	t.Helper()
	led, err := fsm.New(fsm.Config{Store: newStore(t), MaxListScan: maxScan})
	if err != nil {
		t.Fatal(err)
	}
	var batch []fsm.Event
	var acme []string
	for i := range 7 {
		tenant, regions := "acme", []string{"use1"}
		if i%2 == 1 {
			regions = []string{"euw1", "use1"}
		}
		if i >= 5 {
			tenant = "globex"
		}
		id := fmt.Sprintf("use1-1700000000000-gate1-%05d", i+1)
		j := fsmtest.NewJob(id, tenant, uint64(i*100), regions...)
		batch = append(batch, j.Created())
		if i%3 == 0 {
			batch = append(batch, j.Ev(1, 1, accept("use1")))
		}
		if tenant == "acme" {
			acme = append(acme, id)
		}
	}
	if _, err := led.Apply(1, batch); err != nil {
		t.Fatal(err)
	}
	return led, acme
}

func listAll(t *testing.T, led *fsm.Ledger, q fsm.JobQuery) ([]string, int) {
	t.Helper()
	var ids []string
	pages := 0
	for {
		page, err := led.ListJobs(q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, j := range page.Jobs {
			ids = append(ids, j.JobID)
		}
		if page.Next == "" {
			return ids, pages
		}
		q.Cursor = page.Next
	}
}

func TestListJobs_FiltersAndPages(t *testing.T) {
	led, acme := readFixture(t, 0)
	for _, tc := range []struct {
		name string
		q    fsm.JobQuery
		want []string
	}{
		{"tenant", fsm.JobQuery{Tenant: "acme", Limit: 2}, acme},
		{"status", fsm.JobQuery{Tenant: "acme", Status: running}, []string{acme[0], acme[3]}},
		{"region", fsm.JobQuery{Tenant: "acme", Region: "euw1", Limit: 1}, []string{acme[1], acme[3]}},
		{"other tenant", fsm.JobQuery{Tenant: "globex"}, []string{"use1-1700000000000-gate1-00006", "use1-1700000000000-gate1-00007"}},
		{"unknown tenant", fsm.JobQuery{Tenant: "nobody"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := listAll(t, led, tc.q)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// A list over every tenant (operators) scans the jobs, MaxListScan per
// page, so a rare match costs bounded work per page.
func TestListJobs_BoundsTheScanOverEveryTenantPerPage(t *testing.T) {
	led, acme := readFixture(t, 2)
	got, pages := listAll(t, led, fsm.JobQuery{Status: running})
	want := []string{acme[0], acme[3], "use1-1700000000000-gate1-00007"}
	if fmt.Sprint(got) != fmt.Sprint(want) || pages < 3 {
		t.Fatalf("got %v in %d pages, want %v in at least 3", got, pages, want)
	}
}

// A tenant's list comes from the store's indexes: full pages whatever
// MaxListScan says.
func TestListJobs_TenantListIsServedFromTheIndexes(t *testing.T) {
	led, acme := readFixture(t, 1)
	for _, tc := range []struct {
		name      string
		q         fsm.JobQuery
		want      []string
		wantPages int
	}{
		{"status", fsm.JobQuery{Tenant: "acme", Status: running, Limit: 2}, []string{acme[0], acme[3]}, 2},
		{"region", fsm.JobQuery{Tenant: "acme", Region: "euw1"}, []string{acme[1], acme[3]}, 1},
		{"region and status", fsm.JobQuery{Tenant: "acme", Region: "euw1", Status: pending}, []string{acme[1]}, 1},
		{"tenant", fsm.JobQuery{Tenant: "acme", Limit: 5}, acme, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, pages := listAll(t, led, tc.q)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || pages != tc.wantPages {
				t.Fatalf("got %v in %d pages, want %v in %d", got, pages, tc.want, tc.wantPages)
			}
		})
	}
}

func TestListJobs_RefusesBadQueries(t *testing.T) {
	led, _ := readFixture(t, 0)
	for _, tc := range []struct {
		name string
		q    fsm.JobQuery
		want error
	}{
		{"garbage cursor", fsm.JobQuery{Tenant: "acme", Cursor: "!!"}, fsm.ErrInvalidCursor},
		{"cursor of another list", fsm.JobQuery{Tenant: "acme", Cursor: "ZXg"}, fsm.ErrInvalidCursor},
		{"limit over the maximum", fsm.JobQuery{Tenant: "acme", Limit: fsm.MaxListLimit + 1}, fsm.ErrLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := led.ListJobs(tc.q); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestReads_AreTenantScoped(t *testing.T) {
	led, acme := readFixture(t, 0)
	if _, err := led.Job("acme", acme[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := led.Job("globex", acme[0]); !errors.Is(err, fsm.ErrNotFound) {
		t.Fatalf("job of another tenant: %v", err)
	}
	if _, err := led.JobEvents(fsm.EventQuery{Tenant: "globex", JobID: acme[0]}); !errors.Is(err, fsm.ErrNotFound) {
		t.Fatalf("events of another tenant's job: %v", err)
	}
	if _, err := led.JobDigest("globex", acme[0]); !errors.Is(err, fsm.ErrNotFound) {
		t.Fatalf("digest of another tenant's job: %v", err)
	}
	page, err := led.JobEvents(fsm.EventQuery{Tenant: "acme", JobID: acme[0]})
	if err != nil || len(page.Events) != 2 || page.Events[0].Type != fsm.TypeJobCreated || page.Events[0].Seq == 0 {
		t.Fatalf("events %+v %v", page, err)
	}
}

func TestDigest_ChangesWithStateOnly(t *testing.T) {
	led, acme := readFixture(t, 0)
	d1, i1, err := led.Digest()
	if err != nil {
		t.Fatal(err)
	}
	j := fsmtest.NewJob(acme[1], "acme", 10_000, "euw1", "use1")
	j.Wall += 100
	ev := j.Ev(1, 1, accept("euw1"))
	if _, err := led.Apply(2, []fsm.Event{ev}); err != nil {
		t.Fatal(err)
	}
	d2, i2, _ := led.Digest()
	if d2 == d1 || i2 != 2 || i1 != 1 {
		t.Fatalf("digest %s -> %s, index %d -> %d", d1, d2, i1, i2)
	}
	if _, err := led.Apply(3, []fsm.Event{ev}); err != nil {
		t.Fatal(err)
	}
	if d3, _, _ := led.Digest(); d3 != d2 {
		t.Fatal("a duplicate changed the digest")
	}
}

func TestJobStateJSON_HasTheAPIShapeAndRoundTrips(t *testing.T) {
	led := runSteps(t, []step{ok1(accept("use1"), running), ok1(progress("use1", 5, true), running), ok1(cancel(), cancelling)})
	js, err := led.Job("acme", tableJobID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(js)
	if err != nil {
		t.Fatal(err)
	}
	var shape struct {
		JobID   string `json:"job_id"`
		Tenant  string `json:"tenant"`
		Status  string `json:"status"`
		Regions map[string]struct {
			Status    string `json:"status"`
			Completed uint64 `json:"completed"`
		} `json:"regions"`
		Fence    uint64 `json:"fence"`
		HLC      string `json:"hlc"`
		Decision struct {
			Type string `json:"type"`
			Body struct {
				Reason string `json:"reason"`
			} `json:"body"`
		} `json:"decision"`
	}
	if err := json.Unmarshal(b, &shape); err != nil {
		t.Fatal(err)
	}
	if shape.JobID != tableJobID || shape.Tenant != "acme" || shape.Status != "CANCELLING" || shape.Fence != 1 ||
		shape.Regions["use1"].Status != "DONE" || shape.Regions["use1"].Completed != 5 || shape.Regions["euw1"].Status != "PENDING" ||
		shape.HLC != js.HLC.String() || shape.Decision.Type != "JobCancellationRequested" || shape.Decision.Body.Reason != "stop" {
		t.Fatalf("JSON %s", b)
	}
	var back fsm.JobState
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, js) {
		t.Fatalf("round trip\n got  %+v\n want %+v", back, *js)
	}
}

// A completion waiting for an acceptance is the job's
// "pending_completion" (absent otherwise) and round-trips.
func TestJobStateJSON_PendingCompletion(t *testing.T) {
	led := runSteps(t, []step{ok1(fail(), failed),
		{complete(), 2, absorbed, tr(failed, completed, fsm.TypeJobCompleted), failed}})
	js, err := led.Job("acme", tableJobID)
	if err != nil {
		t.Fatal(err)
	}
	if js.Pending.Type != fsm.TypeJobCompleted || js.Pending.Fence != 2 {
		t.Fatalf("pending %+v", js.Pending)
	}
	b, err := json.Marshal(js)
	if err != nil {
		t.Fatal(err)
	}
	var shape struct {
		Pending *struct {
			Type  string `json:"type"`
			Fence uint64 `json:"fence"`
		} `json:"pending_completion"`
	}
	if err := json.Unmarshal(b, &shape); err != nil || shape.Pending == nil || shape.Pending.Type != "JobCompleted" || shape.Pending.Fence != 2 {
		t.Fatalf("JSON %s (%v)", b, err)
	}
	var back fsm.JobState
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(&back, js) {
		t.Fatalf("round trip %v\n got  %+v\n want %+v", err, back, *js)
	}
	// The first acceptance lets it compete: fence 2 outranks the failure's 1.
	r, err := led.Apply(100, []fsm.Event{fsmtest.NewJob(tableJobID, "acme", 900, "use1", "euw1").Ev(1, 1, accept("euw1"))})
	if err != nil || r[0].Outcome != applied {
		t.Fatalf("accept: %+v %v", r, err)
	}
	if js, _ = led.Job("acme", tableJobID); js.Status != completed || js.Pending.Type != 0 || js.Fence != 2 {
		t.Fatalf("after the acceptance: %s, pending %+v, fence %d", js.Status, js.Pending, js.Fence)
	}
	if b, _ = json.Marshal(js); bytes.Contains(b, []byte("pending_completion")) {
		t.Fatalf("JSON %s", b)
	}
}

package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/api"
)

// encodingJSON is what json.Encoder (httpx.WriteJSON) writes for v: the
// reference of the hand encoders.
func encodingJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The hand-encoded answers are encoding/json's bytes, whatever fields are
// set; what the hand encoder declines (a per-event error, a string to
// escape) is answered by encoding/json, so the bytes are the same too.
func TestAnswers_AreEncodingJSONs(t *testing.T) {
	ts := hlc.Timestamp{WallMs: 1_700_000_000_123, Logical: 7, Node: 3}
	id := fsm.EventID{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0xff}
	wr := api.WriteResponse{Durability: "regional", HLC: ts, Session: "use1:42"}
	batches := []struct {
		name     string
		out      api.BatchResponse
		declined bool
	}{
		{"no results", api.BatchResponse{WriteResponse: wr}, false},
		{"empty results", api.BatchResponse{WriteResponse: wr, Results: []api.EventResult{}}, false},
		{"one applied", api.BatchResponse{WriteResponse: wr, Results: []api.EventResult{{ID: id, Outcome: "applied", Seq: 9}}}, false},
		{"below the tier", api.BatchResponse{WriteResponse: api.WriteResponse{Durability: "local", HLC: ts, Write: "m1/17"}}, false},
		{"job ids and no seq", api.BatchResponse{WriteResponse: wr, Results: []api.EventResult{
			{ID: id, JobID: "use1-1700000000000-g1-00001", Outcome: "duplicate"}, {Outcome: "applied", Seq: 1 << 60}}}, false},
		{"an error", api.BatchResponse{WriteResponse: wr, Results: []api.EventResult{
			{ID: id, Outcome: "rejected", Error: &api.Error{Code: "conflict", Message: "x <y> & \"z\"", Details: map[string]any{"a": 1}}}}}, true},
		{"a string to escape", api.BatchResponse{WriteResponse: api.WriteResponse{Durability: "regional", HLC: ts, Session: "g<1>:\u2028é"}}, true},
		{"zero", api.BatchResponse{}, false},
	}
	for _, tt := range batches {
		t.Run("batch/"+tt.name, func(t *testing.T) {
			want := encodingJSON(t, tt.out)
			got, ok := appendBatchResponse(nil, &tt.out)
			if ok == tt.declined || (ok && !bytes.Equal(got, want)) {
				t.Fatalf("hand encoder (ok %v):\n got %s\nwant %s", ok, got, want)
			}
			checkWritten(t, func(w http.ResponseWriter) { writeBatchAnswer(w, http.StatusOK, &tt.out) }, want)
		})
	}
	submits := []struct {
		name     string
		out      api.SubmitJobResponse
		declined bool
	}{
		{"created", api.SubmitJobResponse{JobID: "use1-1700000000000-g1-00001", WriteResponse: wr}, false},
		{"existing", api.SubmitJobResponse{JobID: "j", Existing: true, WriteResponse: api.WriteResponse{Durability: "global", HLC: ts}}, false},
		{"queued", api.SubmitJobResponse{JobID: "j", WriteResponse: wr, Queued: true, Status: "PENDING",
			QueuedBy: "max_per_hour", NextEligibleAt: "2026-01-02T03:04:05Z"}, false},
		{"queued for a slot", api.SubmitJobResponse{JobID: "j", WriteResponse: wr, Queued: true, Status: "PENDING", QueuedBy: "max_active"}, false},
		{"local with its write", api.SubmitJobResponse{JobID: "j", WriteResponse: api.WriteResponse{Durability: "local", HLC: ts, Write: "g1/3"}}, false},
		{"a string to escape", api.SubmitJobResponse{JobID: "a&b", WriteResponse: wr}, true},
		{"a control character", api.SubmitJobResponse{JobID: "j", WriteResponse: api.WriteResponse{Durability: "x\ty", HLC: ts}}, true},
		{"zero", api.SubmitJobResponse{}, false},
	}
	for _, tt := range submits {
		t.Run("submit/"+tt.name, func(t *testing.T) {
			want := encodingJSON(t, tt.out)
			got, ok := appendSubmitJobResponse(nil, &tt.out)
			if ok == tt.declined || (ok && !bytes.Equal(got, want)) {
				t.Fatalf("hand encoder (ok %v):\n got %s\nwant %s", ok, got, want)
			}
			checkWritten(t, func(w http.ResponseWriter) { writeSubmitAnswer(w, http.StatusCreated, &tt.out) }, want)
		})
	}
}

// checkWritten checks that write answers JSON with body want, as
// httpx.WriteJSON would.
func checkWritten(t *testing.T, write func(http.ResponseWriter), want []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	write(rec)
	if got := rec.Body.Bytes(); !bytes.Equal(got, want) {
		t.Fatalf("written:\n got %s\nwant %s", got, want)
	}
	if ct := rec.Header().Values("Content-Type"); len(ct) != 1 || ct[0] != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
}

// appendPlainString takes a string only when encoding/json writes it
// unchanged between quotes.
func FuzzAnswerString(f *testing.F) {
	for _, s := range []string{"", "use1:42", "a\"b", "a\\b", "<>&", "é", "\u2028", "\x7f", "\x00", "\xff", "m1/17"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendPlainString([]byte("x"), s)
		if ok && !bytes.Equal(got[1:], want) {
			t.Fatalf("%q: got %s, want %s", s, got[1:], want)
		}
		if !ok && string(want) == `"`+s+`"` && s != "" {
			// Declining a string encoding/json leaves as it is costs only
			// speed, but the plain set is meant to be exactly those.
			for i := 0; i < len(s); i++ {
				if c := s[i]; c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
					continue
				}
				return // non-ASCII that encoding/json keeps: declined on purpose
			}
			t.Fatalf("%q declined though it is plain", s)
		}
	})
}

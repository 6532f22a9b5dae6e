package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

func TestParseResponseMeta(t *testing.T) {
	tests := []struct {
		name    string
		headers map[string]string
		want    ResponseMeta
		wantErr string
	}{
		{"none", nil, ResponseMeta{Status: 200}, ""},
		{"all", map[string]string{HeaderIndex: "12", HeaderLastContact: "250", HeaderLeader: "use1-gate1", HeaderSession: "global:12"},
			ResponseMeta{Status: 200, Index: 12, LastContact: 250 * time.Millisecond, Leader: "use1-gate1", Session: "global:12"}, ""},
		{"never contacted", map[string]string{HeaderLastContact: "4611686018427"},
			ResponseMeta{Status: 200, LastContact: 4611686018427 * time.Millisecond}, ""},
		{"bad index", map[string]string{HeaderIndex: "-1"}, ResponseMeta{}, "Strata-Index"},
		{"bad last contact", map[string]string{HeaderLastContact: "1s"}, ResponseMeta{}, "Strata-Last-Contact"},
		{"negative last contact", map[string]string{HeaderLastContact: "-5"}, ResponseMeta{}, "Strata-Last-Contact"},
		{"overflowing last contact", map[string]string{HeaderLastContact: "9223372036854775807"}, ResponseMeta{}, "Strata-Last-Contact"},
		{"leader with space", map[string]string{HeaderLeader: "a b"}, ResponseMeta{}, "Strata-Leader"},
		{"long session", map[string]string{HeaderSession: strings.Repeat("s", MaxMetaHeaderBytes+1)}, ResponseMeta{}, "over the limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			got, err := ParseResponseMeta(200, h)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.Index != tt.want.Index || got.LastContact != tt.want.LastContact ||
				got.Leader != tt.want.Leader || got.Session != tt.want.Session || got.Status != tt.want.Status {
				t.Fatalf("ParseResponseMeta = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestDecodeError(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   Error
	}{
		{"envelope", 409, `{"error":{"code":"conflict","message":"key k1 names another job"}}`,
			Error{Status: 409, Code: CodeConflict, Message: "key k1 names another job"}},
		{"envelope without code", 400, `{"error":{"message":"x"}}`,
			Error{Status: 400, Code: CodeBadRequest, Message: `Bad Request: {"error":{"message":"x"}}`}},
		{"empty body", 503, "", Error{Status: 503, Code: CodeUnavailable, Message: "Service Unavailable"}},
		{"plain text", 401, "go away\n", Error{Status: 401, Code: CodeUnauthenticated, Message: "Unauthorized: go away"}},
		{"unknown status", 599, "x", Error{Status: 599, Code: CodeInternal, Message: "HTTP status 599: x"}},
		{"other 4xx", 418, "", Error{Status: 418, Code: CodeBadRequest, Message: "I'm a teapot"}},
		{"invalid utf-8", 500, "a\xffb", Error{Status: 500, Code: CodeInternal, Message: "Internal Server Error: a b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecodeError(tt.status, []byte(tt.body))
			if got.Status != tt.want.Status || got.Code != tt.want.Code || got.Message != tt.want.Message {
				t.Fatalf("DecodeError = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeError_LongBodyIsCut(t *testing.T) {
	got := DecodeError(500, []byte(strings.Repeat("y", 10_000)))
	if len(got.Message) > errorSnippetBytes+64 || !strings.HasSuffix(got.Message, "...") {
		t.Fatalf("message of %d bytes %q, want at most ~%d ending in ...", len(got.Message), got.Message, errorSnippetBytes)
	}
}

// FuzzParseResponseMeta: the parser never panics, accepts only bounded
// printable values, and what SetHeaders writes parses back to itself.
func FuzzParseResponseMeta(f *testing.F) {
	f.Add("12", "250", "use1-gate1", "global:12")
	f.Add("", "", "", "")
	f.Add("18446744073709551615", "9223372036854", "n", "x")
	f.Add("1e3", "-1", "a\x00", "s s")
	f.Fuzz(func(t *testing.T, index, lastContact, leader, session string) {
		h := http.Header{}
		h[HeaderIndex] = []string{index}
		h[HeaderLastContact] = []string{lastContact}
		h[HeaderLeader] = []string{leader}
		h[HeaderSession] = []string{session}
		m, err := ParseResponseMeta(200, h)
		if err != nil {
			return
		}
		if len(m.Leader) > MaxMetaHeaderBytes || len(m.Session) > MaxMetaHeaderBytes || m.LastContact < 0 {
			t.Fatalf("accepted out-of-bounds meta %+v", m)
		}
		back := http.Header{}
		m.SetHeaders(back)
		m2, err := ParseResponseMeta(200, back)
		if err != nil {
			t.Fatalf("re-parse of %v: %v", back, err)
		}
		if !reflect.DeepEqual(m2, m) {
			t.Fatalf("round trip: %+v became %+v", m, m2)
		}
	})
}

// FuzzDecodeError: any body gives an *Error with the status set, a code
// and a message of bounded size when the body is not an envelope.
func FuzzDecodeError(f *testing.F) {
	f.Add(404, []byte(`{"error":{"code":"not_found","message":"m","details":{"a":1}}}`))
	f.Add(502, []byte("<html>bad</html>"))
	f.Add(500, []byte("\xff\xfe\x00"))
	f.Add(400, []byte(`{"error":null}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		e := DecodeError(status, body)
		if e == nil || e.Status != status || e.Code == "" {
			t.Fatalf("DecodeError(%d, %q) = %+v", status, body, e)
		}
		var env ErrorEnvelope
		isEnvelope := json.Unmarshal(body, &env) == nil && env.Error != nil && env.Error.Code != ""
		if !isEnvelope {
			if len(e.Message) > 4*errorSnippetBytes+64 || !utf8.ValidString(e.Message) {
				t.Fatalf("message of %d bytes, valid UTF-8 %v", len(e.Message), utf8.ValidString(e.Message))
			}
		}
	})
}

// testEvents returns stored events of one job as a server would send them.
func testEvents(t testing.TB) []fsm.StoredEvent {
	j := fsmtest.NewJob("use1-1700000000000-g1-00001", "acme", 1, "use1")
	created := j.Created()
	cancel := j.Ev(1, 2, &fsm.JobCancellationRequested{Reason: "stop", Requestor: "ops"})
	var link fsm.Hash
	link[0], link[31] = 0xab, 0xcd
	return []fsm.StoredEvent{{Event: created, Seq: 1}, {Event: cancel, Seq: 2, Link: link}}
}

func TestEventList_DecodesWhatTheServerEncodes(t *testing.T) {
	events := testEvents(t)
	b, err := json.Marshal(EventList{Events: events, NextCursor: "c"})
	if err != nil {
		t.Fatal(err)
	}
	var got EventList
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if got.NextCursor != "c" || len(got.Events) != 2 || got.Events[1].Seq != 2 || got.Events[1].Link != events[1].Link ||
		got.Events[1].ID != events[1].ID {
		t.Fatalf("decoded %+v", got)
	}
}

func TestEventList_RefusesUnknownEventFields(t *testing.T) {
	var got EventList
	err := json.Unmarshal([]byte(`{"events":[{"id":"00","type":"JobCreated","bogus":1}]}`), &got)
	if err == nil {
		t.Fatal("an unknown event field was accepted")
	}
}

// FuzzEventList: decoding never panics, and a decoded page encodes and
// decodes to itself.
func FuzzEventList(f *testing.F) {
	b, err := json.Marshal(EventList{Events: testEvents(f), NextCursor: "c"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"events":null}`))
	f.Add([]byte(`{"events":[{"seq":"x"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var l EventList
		if json.Unmarshal(b, &l) != nil {
			return
		}
		enc, err := json.Marshal(l)
		if err != nil {
			return // an event the fsm refuses to encode (Validate is the server's job)
		}
		var back EventList
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("re-decode of %s: %v", enc, err)
		}
		enc2, _ := json.Marshal(back)
		if string(enc2) != string(enc) {
			t.Fatalf("round trip:\n%s\n%s", enc, enc2)
		}
	})
}

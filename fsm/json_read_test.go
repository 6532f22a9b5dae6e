package fsm_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// usualForms renders e as clients write it: compact (Go's encoder),
// indented, and with keys sorted (the body first, as encoders of maps and
// Python's sort_keys write it).
func usualForms(tb testing.TB, e fsm.Event) map[string][]byte {
	compact, err := json.Marshal(e)
	if err != nil {
		tb.Fatal(err)
	}
	indented, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(compact, &fields); err != nil {
		tb.Fatal(err)
	}
	sorted, err := json.Marshal(fields)
	if err != nil {
		tb.Fatal(err)
	}
	return map[string][]byte{"compact": compact, "indented": indented, "sorted keys": sorted}
}

// The reader takes what clients usually send, of every type, and decodes
// it as encoding/json does: if it fell back, nothing would fail but the
// speed.
func TestReadEventJSON_TakesTheUsualFormsOfEveryType(t *testing.T) {
	samples := fsmtest.SampleEvents()
	escaped := samples[3] // JobCancellationRequested: free text
	escaped.Body = &fsm.JobCancellationRequested{Reason: "say \"stop\"\n\ttab \\ é ✓ \u2028", Requestor: "bob"}
	for _, e := range append(samples, escaped) {
		for form, b := range usualForms(t, e) {
			t.Run(e.Type.String()+"/"+form, func(t *testing.T) {
				got, ok := fsm.ReadEventJSONFast(b)
				if !ok {
					t.Fatalf("the reader fell back on %s", b)
				}
				if !reflect.DeepEqual(got, e) {
					t.Fatalf("read %+v, want %+v", got, e)
				}
			})
		}
	}
}

func TestReadEventsJSON(t *testing.T) {
	one, err := json.Marshal(fsmtest.SampleEvents()[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in    string
		limit int
		n     int // -1: falls back
	}{
		{"[]", 1, 0},
		{" [ ] x", 1, 0},
		{"[" + string(one) + "]", 1, 1},
		{"[" + string(one) + "," + string(one) + "]", 1, -1},
		{"[" + string(one) + " , " + string(one) + "]  ", 2, 2},
		{"[" + string(one) + ",]", 2, -1},
		{"[" + string(one), 2, -1},
		{"[null]", 2, -1},
		{"{}", 2, -1},
	} {
		events, n, ok := fsm.ReadEventsJSON([]byte(tc.in), tc.limit)
		if tc.n < 0 {
			if ok {
				t.Errorf("%.40q: took %d events, want a fall back", tc.in, len(events))
			}
			continue
		}
		if !ok || len(events) != tc.n || events == nil || n != strings.LastIndexByte(tc.in, ']')+1 {
			t.Errorf("%.40q: %d events, %d bytes, %v", tc.in, len(events), n, ok)
		}
	}
}

// FuzzEventJSONMatchesStandard: whatever the reader takes, encoding/json
// (the decoder before the reader) decodes to the same event; and
// Event.UnmarshalJSON accepts, decodes and refuses exactly as
// encoding/json, to the error message.
func FuzzEventJSONMatchesStandard(f *testing.F) {
	for _, e := range fsmtest.SampleEvents() {
		for _, b := range usualForms(f, e) {
			f.Add(b)
		}
	}
	const env = `{"id":"53747261746100000000000000000002","type":"%s","job_id":"j","tenant":"acme","region":"use1","node":"n","hlc":"1:2:3","fence":%s,"body":%s}`
	for _, s := range []struct{ typ, fence, body string }{
		{"JobCancellationRequested", "1", `{"reason":"a\"b\u00e9\ud800","requestor":"\xff"}`},
		{"JobCancellationRequested", "1", `{"Reason":"x","requestor":"y"}`},
		{"JobCancellationRequested", "1", `{"reason":"x","reason":"y"}`},
		{"JobCancellationRequested", "1.0", `{"reason":null}`},
		{"JobAccepted", "-0", `{"region":"use1","worker_count":4294967296}`},
		{"JobAccepted", "1e2", `{"region":"use1","worker_count":01}`},
		{"JobCreated", "18446744073709551615", `{"spec":{"regions":[],"workflows":[],"timeout":"1h"},"assigned_regions":null}`},
		{"JobCreated", "0", `{"spec":{"workflows":[{"rate":1e400,"failure_ratio":-0.5E-3}]}}`},
		{"WorkflowProgress", "0", `{"stats":{"a":1,"a":2}}`},
		{"WorkflowProgress", "0", `{"stats":{}}`},
		{"WorkflowLeased", "0", `{"lease_until":-9223372036854775808,"lease_fence":0}`},
		{"WorkflowLeased", "0", `{"lease_until":9223372036854775808}`},
		{"ForwardMark", "0", `{"marks":[{"tenant":"a","seq":1}]}`},
		{"WorkerJoined", "0", `null`},
		{"WorkerJoined", "0", `{"worker":"w"} `},
	} {
		f.Add([]byte(fmt.Sprintf(env, s.typ, s.fence, s.body)))
	}
	f.Add([]byte(`{"type":"WorkerLeft","seq":0,"body":{}}`))
	f.Add([]byte(`{"type":"WorkerLeft","body":{}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var want fsm.Event
		wantErr := fsm.UnmarshalEventStandard(&want, data)
		if got, ok := fsm.ReadEventJSONFast(data); ok {
			if wantErr != nil {
				t.Fatalf("the reader took what encoding/json refuses (%v): %q", wantErr, data)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("the reader decoded %q to\n%+v\nencoding/json to\n%+v", data, got, want)
			}
		}
		var got fsm.Event
		err := got.UnmarshalJSON(data)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("UnmarshalJSON(%q) = %v, encoding/json %v", data, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("UnmarshalJSON(%q) = %+v, encoding/json %+v", data, got, want)
		}
	})
}

// BenchmarkEventUnmarshalJSON: one event through Event.UnmarshalJSON (the
// reader) and through encoding/json alone (the decoder before it).
func BenchmarkEventUnmarshalJSON(b *testing.B) {
	for _, e := range []fsm.Event{fsmtest.SampleEvents()[0], fsmtest.SampleEvents()[8]} {
		data, err := json.Marshal(e)
		if err != nil {
			b.Fatal(err)
		}
		for _, d := range []struct {
			name      string
			unmarshal func(*fsm.Event, []byte) error
		}{{"standard", fsm.UnmarshalEventStandard}, {"reader", (*fsm.Event).UnmarshalJSON}} {
			b.Run(e.Type.String()+"/"+d.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					var got fsm.Event
					if err := d.unmarshal(&got, data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// Every one-byte deletion and replacement of every sample decodes (or is
// refused) alike through UnmarshalJSON and encoding/json: the reader's
// edges (quotes, escapes, separators, numbers) met systematically.
func TestEventJSON_OneByteMutationsMatchStandard(t *testing.T) {
	for _, e := range fsmtest.SampleEvents() {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b {
			variants := [][]byte{append(b[:i:i], b[i+1:]...)}
			for _, c := range []byte("\"\\}],: 0\xff") {
				v := append([]byte(nil), b...)
				v[i] = c
				variants = append(variants, v)
			}
			for _, v := range variants {
				var got, want fsm.Event
				err, wantErr := got.UnmarshalJSON(v), fsm.UnmarshalEventStandard(&want, v)
				if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
					t.Fatalf("%q: UnmarshalJSON %v, encoding/json %v", v, err, wantErr)
				}
			}
		}
	}
}

package httpapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// usualBatches are requests as clients send them: the load tool's two
// shapes (1 and n events), every event type alone and all of them in one
// request, compact and indented.
func usualBatches(tb testing.TB, n int) map[string][]byte {
	out := map[string][]byte{}
	for _, typ := range []fsm.EventType{fsm.TypeWorkflowDispatched, fsm.TypeJobCreated} {
		shape := newBatchShape(tb, typ)
		out["bench "+typ.String()+" x1"] = shape.request(1)
		out[fmt.Sprintf("bench %s x%d", typ, n)] = shape.request(n)
	}
	samples := fsmtest.SampleEvents()
	for _, e := range samples {
		b, err := json.Marshal(map[string]any{"events": []fsm.Event{e}})
		if err != nil {
			tb.Fatal(err)
		}
		out[e.Type.String()] = b
	}
	all, err := json.MarshalIndent(map[string]any{"events": samples}, "", "\t")
	if err != nil {
		tb.Fatal(err)
	}
	out["every type, indented"] = all
	return out
}

// The one-pass path takes the usual requests (if it fell back, nothing
// would fail but the speed) and decodes them as the reference does.
func TestDecodeBatchRequest_TakesTheUsualFormsInOnePass(t *testing.T) {
	for name, body := range usualBatches(t, 1000) {
		t.Run(name, func(t *testing.T) {
			events, ok := readBatch(body)
			if !ok {
				t.Fatalf("fell back on %.200s", body)
			}
			want, err := decodeBatchReference(body)
			if err != nil || !reflect.DeepEqual(events, want) {
				t.Fatalf("read %d events, the reference %d (%v)", len(events), len(want), err)
			}
		})
	}
}

// At the count limit the one-pass path still takes the batch; past it,
// the refusal is the reference's.
func TestDecodeBatchRequest_CountLimitAsTheReference(t *testing.T) {
	for _, n := range []int{fsm.MaxBatchEvents, fsm.MaxBatchEvents + 1} {
		body := []byte(`{"events":[` + strings.Repeat(workerEvent+`,`, n-1) + workerEvent + `]}`)
		_, fast := readBatch(body)
		req, err := decodeBatchRequest(body)
		want, wantErr := decodeBatchReference(body)
		if fast != (n <= fsm.MaxBatchEvents) || !reflect.DeepEqual(err, wantErr) || (err == nil && !reflect.DeepEqual(req.Events, want)) {
			t.Fatalf("%d events: one pass %v, %d events, %v; the reference %d, %v", n, fast, len(req.Events), err, len(want), wantErr)
		}
	}
}

// Every one-byte deletion and replacement of a small batch is decided
// alike by decodeBatchRequest and the reference: the envelope's edges met
// systematically.
func TestDecodeBatchRequest_OneByteMutationsMatchReference(t *testing.T) {
	b := []byte(`{"events":[` + workerEvent + `,` + workerEvent + `]}`)
	for i := range b {
		variants := [][]byte{append(b[:i:i], b[i+1:]...)}
		for _, c := range []byte("\"\\{}[],: 0\xff") {
			v := append([]byte(nil), b...)
			v[i] = c
			variants = append(variants, v)
		}
		for _, v := range variants {
			req, err := decodeBatchRequest(v)
			want, wantErr := decodeBatchReference(v)
			if !reflect.DeepEqual(err, asProduction(wantErr)) || (err == nil && !reflect.DeepEqual(req.Events, want)) {
				t.Fatalf("%q: %v, the reference %v", v, err, wantErr)
			}
		}
	}
}

// FuzzDecodeBatchMatchesReference: decodeBatchRequest accepts what the
// decoder before the one-pass reader accepted, with equal events, and
// refuses what it refused with the same error.
func FuzzDecodeBatchMatchesReference(f *testing.F) {
	for _, body := range usualBatches(f, 3) {
		f.Add(body)
	}
	f.Add([]byte(`{"events":[` + workerEvent + `],"events":[]}`))
	f.Add([]byte(`{"EVENTS":[` + workerEvent + `]}`))
	f.Add([]byte(`{"\u0065vents":[` + workerEvent + `]}`))
	f.Add([]byte(`{"events":[` + workerEvent + `]} {}`))
	f.Add([]byte(`{"events":[` + workerEvent + `,]}`))
	f.Add([]byte(`{"events":[]}`))
	f.Add([]byte(`{"events":[000`))
	f.Add([]byte(`"events":[` + workerEvent + `]}`))
	f.Add([]byte(`{"events"[` + workerEvent + `]}`))
	f.Add([]byte(`{"events":[` + workerEvent + `]`))
	f.Add([]byte(`{"events":[{"fence":-1}]}`))
	f.Add([]byte(`{"events":[{"type":"WorkerJoined","seq":1,"body":{"worker":"w1","capacity":1}}]}`))
	f.Add([]byte(`{"events":[{"body":{"worker":"w1","capacity":1},"TYPE":"WorkerJoined"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeBatchRequest(body)
		want, wantErr := decodeBatchReference(body)
		if (err == nil) != (wantErr == nil) || (err != nil && !reflect.DeepEqual(err, asProduction(wantErr))) {
			t.Fatalf("decodeBatchRequest(%.300q) = %v, the reference %v", body, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(req.Events, want) {
			t.Fatalf("decodeBatchRequest(%.300q) decoded\n%+v\nthe reference\n%+v", body, req.Events, want)
		}
	})
}

// asProduction renames the reference's copy of the event's JSON struct in
// an error of encoding/json to the production struct's name.
func asProduction(err error) error {
	ae, ok := err.(*httpx.APIError)
	if !ok {
		return err
	}
	out := *ae
	out.Message = strings.ReplaceAll(out.Message, "httpapi.refEventJSON", "fsm.eventJSON")
	out.Message = strings.ReplaceAll(out.Message, "refEventJSON", "eventJSON")
	return &out
}

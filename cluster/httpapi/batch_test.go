package httpapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
)

const workerEvent = `{"type":"WorkerJoined","body":{"worker":"w1","capacity":1}}`

func TestDecodeBatchRequest(t *testing.T) {
	tests := []struct {
		name, body string
		status     int // 0: decodes
		events     int
	}{
		{"one", `{"events":[` + workerEvent + `]}`, 0, 1},
		{"two", `{"events":[` + workerEvent + `,` + workerEvent + `]}`, 0, 2},
		{"empty", `{"events":[]}`, 400, 0},
		{"no events key", `{}`, 400, 0},
		{"unknown key", `{"evnts":[]}`, 400, 0},
		{"repeated key", `{"events":[` + workerEvent + `],"events":[]}`, 400, 0},
		{"not an object", `[]`, 400, 0},
		{"trailing value", `{"events":[` + workerEvent + `]} {}`, 400, 0},
		{"truncated", `{"events":[` + workerEvent, 400, 0},
		{"unknown event field", `{"events":[{"type":"WorkerJoined","color":1,"body":{"worker":"w1","capacity":1}}]}`, 400, 0},
		{"missing body", `{"events":[{"type":"WorkerJoined"}]}`, 400, 0},
		{"over the count limit", `{"events":[` + strings.Repeat(workerEvent+`,`, fsm.MaxBatchEvents) + `{}]}`, 413, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := decodeBatchRequest([]byte(tt.body))
			if tt.status == 0 {
				if err != nil || len(req.Events) != tt.events {
					t.Fatalf("got %d events, %v", len(req.Events), err)
				}
				return
			}
			var ae *httpx.APIError
			if !errors.As(err, &ae) || ae.Status != tt.status {
				t.Fatalf("got %v, want status %d", err, tt.status)
			}
		})
	}
}

func FuzzDecodeBatchRequest(f *testing.F) {
	f.Add([]byte(`{"events":[` + workerEvent + `]}`))
	f.Add([]byte(`{"events":[{"type":"JobAccepted","body":{"region":"use1","worker_count":1}}]}`))
	f.Add([]byte(`{"events":[{},{}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeBatchRequest(body)
		if err != nil {
			var ae *httpx.APIError
			if !errors.As(err, &ae) || (ae.Status != http.StatusBadRequest && ae.Status != http.StatusRequestEntityTooLarge) {
				t.Fatalf("error %v is not a 400/413 envelope", err)
			}
			return
		}
		if len(req.Events) == 0 || len(req.Events) > fsm.MaxBatchEvents {
			t.Fatalf("decoded %d events", len(req.Events))
		}
	})
}

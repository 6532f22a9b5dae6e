package httpx

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type sample struct {
	Tenant string `json:"tenant"`
	Count  int    `json:"count"`
}

func TestDecodeJSON_BadInputGetsTheRightEnvelope(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		limit      int64
		wantStatus int
		wantIn     string
	}{
		{"ok", `{"tenant":"acme","count":2}`, 1024, 0, ""},
		{"empty", ``, 1024, 400, "empty"},
		{"malformed", `{"tenant":`, 1024, 400, "malformed"},
		{"syntax", `{"tenant" "x"}`, 1024, 400, "malformed JSON at byte"},
		{"unknown field", `{"tenant":"a","bogus":1}`, 1024, 400, `unknown field "bogus"`},
		{"wrong type", `{"count":"two"}`, 1024, 400, `field "count"`},
		{"trailing value", `{"tenant":"a"} {"tenant":"b"}`, 1024, 400, "more than one"},
		{"trailing bracket", `{"tenant":"a"}}`, 1024, 400, "malformed"},
		{"too large", `{"tenant":"` + strings.Repeat("x", 100) + `"}`, 64, 413, "limit of 64 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
			var v sample
			err := DecodeJSON(r, tt.limit, &v)
			if tt.wantStatus != http.StatusRequestEntityTooLarge {
				// A body already read decodes by the same rules.
				var again sample
				if berr := DecodeBytes([]byte(tt.body), &again); (berr == nil) != (err == nil) || again != v {
					t.Fatalf("DecodeBytes: %+v, %v; DecodeJSON: %+v, %v", again, berr, v, err)
				}
			}
			if tt.wantStatus == 0 {
				if err != nil || v.Tenant != "acme" || v.Count != 2 {
					t.Fatalf("got %+v, %v", v, err)
				}
				return
			}
			rec := httptest.NewRecorder()
			WriteError(rec, err)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d (%v)", rec.Code, tt.wantStatus, err)
			}
			var env struct {
				Error APIError `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
				t.Fatalf("envelope: %v: %s", err, rec.Body)
			}
			if env.Error.Code == "" || !strings.Contains(env.Error.Message, tt.wantIn) {
				t.Fatalf("envelope %+v does not mention %q", env.Error, tt.wantIn)
			}
		})
	}
}

func TestWriteError_PlainErrorIs500(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteError(rec, http.ErrHandlerTimeout)
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"code":"internal"`) {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
}

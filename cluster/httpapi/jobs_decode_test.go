package httpapi

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
)

// benchSpec is a submit as strata bench sends it.
const benchSpec = `{"tenant":"bench","idempotency_key":"00000bad-00000000-0000000000000001","regions":["use1"],"timeout":"1h","workflows":[{"name":"bench","count":1,"duration":"1m","rate":0,"failure_ratio":0}]}`

// decodeBothWays decodes body as a submit with decodeSubmit and with
// httpx.DecodeJSON, each from its own request of body's length.
func decodeBothWays(body string, rd func() io.Reader) (got, want fsm.JobSpec, gotErr, wantErr error) {
	req := func() *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/v1/jobs", rd())
		r.ContentLength = int64(len(body))
		return r
	}
	gotErr = decodeSubmit(req(), &got)
	wantErr = httpx.DecodeJSON(req(), httpx.MaxRequestBytes, &want)
	return
}

// sameOutcome fails t unless both decodes gave the same spec or the same
// error envelope.
func sameOutcome(t *testing.T, body string, got, want fsm.JobSpec, gotErr, wantErr error) {
	t.Helper()
	var ga, wa *httpx.APIError
	switch {
	case gotErr == nil && wantErr == nil:
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", body, got, want)
		}
	case gotErr == nil || wantErr == nil:
		t.Fatalf("%q: error %v, want %v", body, gotErr, wantErr)
	case !errors.As(gotErr, &ga) || !errors.As(wantErr, &wa) || ga.Status != wa.Status || ga.Code != wa.Code || ga.Message != wa.Message:
		t.Fatalf("%q: error %v, want %v", body, gotErr, wantErr)
	}
}

// Every body decodes to the same spec, or fails with the same error, on
// the one-pass path as with encoding/json.
func FuzzDecodeSubmitMatchesStandard(f *testing.F) {
	for _, s := range []string{
		benchSpec, " " + benchSpec + "\n", benchSpec + benchSpec, benchSpec + "}", benchSpec + "]",
		// A body that ends the spec early and goes on as the event
		// around it would: the standard decoder refuses it.
		strings.TrimSuffix(benchSpec, "}") + `},"assigned_regions":["use1"]`,
		benchSpec + `,"assigned_regions":["use1"]`, benchSpec + `},"node":"n"`, benchSpec + `}},{"type":"JobCreated","body":{"spec":{}`,
		`{"Tenant":"bench"}`, `{"tenant":null}`, `{"tenant":"a","tenant":"b"}`, `{"timeout":3600000000000}`,
		`{"tenant":"b\u00e9nch","regions":[]}`, `{"workflows":[{"name":"w","count":-1}]}`, `{"bogus":1}`,
		`{}`, ``, ` `, `[]`, `null`, `{"tenant":"a"`, `{"regions":["a","b"],"workflows":[]}`,
		`{"tenant":"x","replay_of":"use1-1-g1-00001"}`, `{"type":"render","admission":"queue"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if len(body) > httpx.MaxRequestBytes {
			return
		}
		got, want, gotErr, wantErr := decodeBothWays(body, func() io.Reader { return strings.NewReader(body) })
		sameOutcome(t, body, got, want, gotErr, wantErr)
	})
}

// The usual spec takes the one-pass reader (or the benchmarks measure
// encoding/json), and a body cut short by its deadline or its client
// gets the error the standard decoder gives.
func TestDecodeSubmit_UsualSpecIsReadAndCutBodiesFailAlike(t *testing.T) {
	b := []byte(specEventPrefix + benchSpec + specEventSuffix)
	if _, ok := readSpec(b); !ok {
		t.Fatal("the usual spec does not take fsm's one-pass reader")
	}
	for _, cut := range []error{os.ErrDeadlineExceeded, io.ErrUnexpectedEOF, io.EOF} {
		for _, at := range []int{0, 10, len(benchSpec) - 1} {
			body := benchSpec
			got, want, gotErr, wantErr := decodeBothWays(body, func() io.Reader {
				return io.MultiReader(strings.NewReader(body[:at]), errReader{cut})
			})
			if gotErr == nil {
				t.Fatalf("cut at %d by %v: no error", at, cut)
			}
			sameOutcome(t, body[:at], got, want, gotErr, wantErr)
		}
	}
}

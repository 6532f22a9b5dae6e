package faultnet

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/transport/api"
)

// newRulesServer serves Handler(f) on a loopback port.
func newRulesServer(t *testing.T, f *Faults) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv := httptest.NewUnstartedServer(Handler(f))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func doRules(t *testing.T, method, url string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, b
}

func TestHandler_GetPutRoundTrip(t *testing.T) {
	f := newFaults(t, Config{})
	srv := newRulesServer(t, f)

	put := `{"wan_latency":"40ms","peers":[` +
		`{"peer":"127.0.0.3:7000","partitioned":true,"delay":"0s","jitter":"0s"},` +
		`{"peer":"127.0.0.2","partitioned":false,"delay":"30ms","jitter":"5ms"}]}`
	resp, body := doRules(t, http.MethodPut, srv.URL, []byte(put))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT status = %d, body %s", resp.StatusCode, body)
	}
	want := Rules{
		WANLatency: Duration(40 * time.Millisecond),
		Peers: []PeerRule{
			{Peer: "127.0.0.2", Delay: Duration(30 * time.Millisecond), Jitter: Duration(5 * time.Millisecond)},
			{Peer: "127.0.0.3", Partitioned: true},
		},
	}
	if got := f.Rules(); !reflect.DeepEqual(got, want) {
		t.Fatalf("rules after PUT = %+v, want %+v", got, want)
	}

	resp, body = doRules(t, http.MethodGet, srv.URL, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET status = %d, body %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET Content-Type = %q, want application/json", ct)
	}
	var got Rules
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("decode GET body %s: %v", body, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GET = %+v, want %+v", got, want)
	}
	if !strings.Contains(string(body), `"30ms"`) {
		t.Errorf("GET body %s: want durations as strings", body)
	}

	// An empty rule set heals everything.
	resp, body = doRules(t, http.MethodPut, srv.URL, []byte(`{"wan_latency":"0s","peers":[]}`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT empty status = %d, body %s", resp.StatusCode, body)
	}
	if got := f.Rules(); len(got.Peers) != 0 || got.WANLatency != 0 {
		t.Fatalf("rules after empty PUT = %+v, want none", got)
	}
}

func TestHandler_BadBodyLeavesRulesUnchanged(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantCode   string
		wantInMsg  string
	}{
		{name: "malformed JSON", body: `{"peers":[`, wantStatus: 400, wantCode: api.CodeBadRequest, wantInMsg: "JSON"},
		{name: "empty body", body: ``, wantStatus: 400, wantCode: api.CodeBadRequest, wantInMsg: "empty"},
		{name: "unknown field", body: `{"peers":[],"loss":0.5}`, wantStatus: 400, wantCode: api.CodeBadRequest, wantInMsg: "loss"},
		{name: "unknown peer field", body: `{"peers":[{"peer":"127.0.0.9","drop":true}]}`, wantStatus: 400, wantCode: api.CodeBadRequest, wantInMsg: "drop"},
		{name: "negative delay", body: `{"peers":[{"peer":"127.0.0.9","delay":"-1s"}]}`, wantStatus: 400, wantCode: api.CodeBadRequest, wantInMsg: "delay -1s"},
		{name: "delay over MaxDelay", body: `{"peers":[{"peer":"127.0.0.9","delay":"2h"}]}`, wantStatus: 400, wantCode: api.CodeBadRequest, wantInMsg: "delay 2h"},
		{name: "bad duration string", body: `{"wan_latency":"soon"}`, wantStatus: 400, wantCode: api.CodeBadRequest, wantInMsg: "soon"},
		{name: "rule names no peer", body: `{"peers":[{"partitioned":true}]}`, wantStatus: 400, wantCode: api.CodeBadRequest, wantInMsg: "no peer"},
		{name: "peer listed twice", body: `{"peers":[{"peer":"127.0.0.9","partitioned":true},{"peer":"127.0.0.9:1","partitioned":true}]}`, wantStatus: 400, wantCode: api.CodeBadRequest, wantInMsg: "twice"},
		{name: "trailing value", body: `{"peers":[]} {}`, wantStatus: 400, wantCode: api.CodeBadRequest, wantInMsg: "more than one"},
		{name: "oversized", body: `{"peers":[` + strings.Repeat(" ", MaxRulesBodyBytes) + `]}`, wantStatus: 413, wantCode: api.CodeTooLarge, wantInMsg: "65536"},
	}
	f := newFaults(t, Config{})
	srv := newRulesServer(t, f)
	f.Partition("127.0.0.2")
	before := f.Rules()

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := doRules(t, http.MethodPut, srv.URL, []byte(tt.body))
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, tt.wantStatus, body)
			}
			var env api.ErrorEnvelope
			if err := json.Unmarshal(body, &env); err != nil || env.Error == nil {
				t.Fatalf("body %s is not an error envelope: %v", body, err)
			}
			if env.Error.Code != tt.wantCode || !strings.Contains(env.Error.Message, tt.wantInMsg) {
				t.Errorf("error = %+v, want code %q and message containing %q", env.Error, tt.wantCode, tt.wantInMsg)
			}
			if got := f.Rules(); !reflect.DeepEqual(got, before) {
				t.Errorf("rules changed to %+v, want %+v", got, before)
			}
		})
	}
}

func TestHandler_OtherMethodIs405(t *testing.T) {
	f := newFaults(t, Config{})
	srv := newRulesServer(t, f)
	for _, method := range []string{http.MethodPost, http.MethodDelete, http.MethodPatch} {
		resp, body := doRules(t, method, srv.URL, []byte(`{}`))
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s status = %d, want 405", method, resp.StatusCode)
		}
		if allow := resp.Header.Get("Allow"); allow != "GET, PUT" {
			t.Errorf("%s Allow = %q, want \"GET, PUT\"", method, allow)
		}
		var env api.ErrorEnvelope
		if err := json.Unmarshal(body, &env); err != nil || env.Error == nil || env.Error.Message == "" {
			t.Errorf("%s body %s is not an error envelope: %v", method, body, err)
		}
	}
}

// FuzzDecodeRules checks that the body decoder never panics, and that
// whatever it accepts survives an encode/decode round trip.
func FuzzDecodeRules(f *testing.F) {
	f.Add([]byte(`{"wan_latency":"40ms","peers":[{"peer":"127.0.0.2","partitioned":true,"delay":"30ms","jitter":"5ms"}]}`))
	f.Add([]byte(`{"peers":[{"peer":"a","delay":1000}]}`))
	f.Add([]byte(`{"peers":null}`))
	f.Add([]byte(`{"peers":[],"clock_offset":"-2.5s"}`))
	f.Add([]byte(`{"x":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		rules, apiErr := decodeRulesFrom(bytes.NewReader(body))
		if apiErr != nil {
			if apiErr.Status != http.StatusBadRequest || apiErr.Message == "" {
				t.Fatalf("error %+v: want a 400 with a message", apiErr)
			}
			return
		}
		enc, err := json.Marshal(rules)
		if err != nil {
			t.Fatalf("encode %+v: %v", rules, err)
		}
		again, apiErr := decodeRulesFrom(bytes.NewReader(enc))
		if apiErr != nil {
			t.Fatalf("decode of re-encoded %s: %+v", enc, apiErr)
		}
		if !reflect.DeepEqual(again, rules) {
			t.Fatalf("round trip: %+v != %+v", again, rules)
		}
	})
}

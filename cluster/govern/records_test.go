package govern

import (
	"strings"
	"testing"
)

func TestBreakerRecord_RoundTripAndRefusals(t *testing.T) {
	good := BreakerRecord{State: "open", SinceMs: 5, Forced: true, Why: "OPS-1"}
	b, err := EncodeBreaker(good)
	if err != nil {
		t.Fatal(err)
	}
	back, s, err := DecodeBreaker(b)
	if err != nil || back != good || s != BreakerOpen {
		t.Fatalf("round trip: %+v %s %v", back, s, err)
	}
	for _, bad := range []string{
		`{"state":"ajar","since":1}`,
		`{"state":"closed","since":1,"forced":true}`,
		`{"state":"open","since":-1}`,
		`{"state":"open","since":1,"extra":1}`,
		`{"state":"open","since":1} {}`,
		`[]`,
		`{"state":"open","since":1,"why":"` + strings.Repeat("x", MaxWhyBytes+1) + `"}`,
		`{"state":"open","since":1,"why":"` + strings.Repeat("x", MaxRecordBytes) + `"}`,
	} {
		if _, _, err := DecodeBreaker([]byte(bad)); err == nil {
			t.Errorf("DecodeBreaker(%.60s) accepted", bad)
		}
	}
	if _, err := EncodeBreaker(BreakerRecord{State: "half_open", Forced: true}); err == nil {
		t.Error("a forced half-open breaker encoded")
	}
	long, err := EncodeBreaker(BreakerRecord{State: "closed", Why: strings.Repeat("é", 1000)})
	if err != nil || len(long) > MaxRecordBytes {
		t.Fatalf("a long reason is not cut: %d bytes, %v", len(long), err)
	}
}

func TestBreakerKey_Splits(t *testing.T) {
	tenant, typ, ok := SplitBreakerKey(BreakerKey("acme", "render.v2"))
	if !ok || tenant != "acme" || typ != "render.v2" {
		t.Fatalf("split: %q %q %v", tenant, typ, ok)
	}
	for _, bad := range []string{"acme", "/render", "acme/", "a/b/c"} {
		if _, _, ok := SplitBreakerKey(bad); ok {
			t.Errorf("SplitBreakerKey(%q) ok", bad)
		}
	}
}

func TestMaintenanceRecord_RoundTrip(t *testing.T) {
	b, err := EncodeMaintenance(MaintenanceRecord{On: true, SinceMs: 9})
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeMaintenance(b)
	if err != nil || !r.On || r.SinceMs != 9 {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := DecodeMaintenance([]byte(`{"on":true,"since":-5}`)); err == nil {
		t.Fatal("negative since accepted")
	}
}

func FuzzDecodeRecords(f *testing.F) {
	f.Add(uint8(0), []byte(`{"state":"half_open","since":12,"why":"probe"}`))
	f.Add(uint8(1), []byte(`{"on":true,"since":12}`))
	f.Fuzz(func(t *testing.T, kind uint8, b []byte) {
		if kind%2 == 0 {
			r, _, err := DecodeBreaker(b)
			if err != nil {
				return
			}
			again, err := EncodeBreaker(r)
			if err != nil {
				t.Fatalf("a decoded record does not encode: %+v: %v", r, err)
			}
			if r2, _, err := DecodeBreaker(again); err != nil || r2 != r {
				t.Fatalf("decode(encode(x)) != x: %+v %+v %v", r, r2, err)
			}
			return
		}
		r, err := DecodeMaintenance(b)
		if err != nil {
			return
		}
		again, _ := EncodeMaintenance(r)
		if r2, err := DecodeMaintenance(again); err != nil || r2 != r {
			t.Fatalf("decode(encode(x)) != x: %+v %+v %v", r, r2, err)
		}
	})
}

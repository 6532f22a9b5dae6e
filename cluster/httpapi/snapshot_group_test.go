package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// A snapshot is restored only into the group it names; a bare one (no
// envelope) only with ?group= naming this group; every refusal is a 400
// that names both groups.
func TestRestoreGroupError(t *testing.T) {
	for _, tc := range []struct {
		snap, confirm, here string
		ok                  bool
		says                []string
	}{
		{snap: "use1", here: "use1", ok: true},
		{snap: "use1", confirm: "use1", here: "use1", ok: true},
		{snap: "", confirm: "use1", here: "use1", ok: true},
		{snap: "global", here: "use1", says: []string{"of group global", "leads group use1"}},
		{snap: "euw1", confirm: "use1", here: "use1", says: []string{"of group euw1", "leads group use1"}},
		{snap: "use1", confirm: "euw1", here: "use1", says: []string{"?group=euw1", "leads group use1"}},
		{snap: "", here: "use1", says: []string{"names no group", "?group=use1"}},
		{snap: "", confirm: "global", here: "use1", says: []string{"?group=global", "leads group use1"}},
	} {
		e := restoreGroupError(tc.snap, tc.confirm, tc.here)
		if tc.ok != (e == nil) {
			t.Fatalf("%+v: %v", tc, e)
		}
		if e == nil {
			continue
		}
		if e.Status != http.StatusBadRequest {
			t.Fatalf("%+v: status %d", tc, e.Status)
		}
		for _, s := range tc.says {
			if !strings.Contains(e.Message, s) {
				t.Fatalf("%+v: %q lacks %q", tc, e.Message, s)
			}
		}
	}
}

package httpapi

import (
	"strings"
	"testing"

	"github.com/strata-ledger/strata/transport/api"
)

func TestWatch_AppendSSEReadsBack(t *testing.T) {
	for _, data := range []string{`{"a":1}`, "", "two\nlines", "\n\n"} {
		b := appendSSE(nil, "state", "42", []byte(data))
		ev, err := api.NewSSEReader(strings.NewReader(string(b))).Next()
		if err != nil || ev.Event != "state" || ev.ID != "42" || string(ev.Data) != data {
			t.Fatalf("%q: %+v %v", data, ev, err)
		}
	}
}

package fsm_test

import (
	"bytes"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

func TestTimeOrderedEventID_LayoutAndOrder(t *testing.T) {
	r := [10]byte{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}
	id := fsm.TimeOrderedEventID(0x0102030405_06, r)
	want := fsm.EventID{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}
	if id != want {
		t.Fatalf("id %x, want %x", id, want)
	}
	if got := fsm.EventIDTime(id); got != 0x010203040506 {
		t.Fatalf("EventIDTime %x", got)
	}
	// A later millisecond sorts after whatever the random part.
	hi := fsm.TimeOrderedEventID(1_700_000_000_000, [10]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	lo := fsm.TimeOrderedEventID(1_700_000_000_001, [10]byte{})
	if bytes.Compare(hi[:], lo[:]) >= 0 {
		t.Fatalf("%x does not sort before %x", hi, lo)
	}
	// Before 1970 clamps to 0; the all-zero id is never made.
	if z := fsm.TimeOrderedEventID(-5, [10]byte{}); z.IsZero() || fsm.EventIDTime(z) != 0 {
		t.Fatalf("zero time gives %x", z)
	}
	// Wraps at 2^48 ms rather than spilling into the random part.
	if got := fsm.EventIDTime(fsm.TimeOrderedEventID(1<<48+7, r)); got != 7 {
		t.Fatalf("2^48+7 ms gives time %d", got)
	}
}

package quota

import (
	"fmt"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// BenchmarkCheck is the gate's max_active check of one submit (and the
// ledger's of one admission): a tenant without a policy (one lookup), and
// a tenant with one whose active jobs are counted up to its limit.
func BenchmarkCheck(b *testing.B) {
	for _, active := range []int{0, 100, 1000} {
		b.Run(fmt.Sprintf("active=%d", active), func(b *testing.B) {
			t := &testing.T{}
			k := newKit(t)
			if active > 0 {
				k.policy(Policy{Tenant: "acme", MaxActive: uint32(active) + 1})
			}
			for i := range active {
				k.job(i+1, "acme", "", 0, false)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = k.led.View(func(tx fsm.ReadTx) error {
					l, err := Check(tx, "acme", "")
					if l != nil || err != nil {
						b.Fatalf("refused: %v %v", l, err)
					}
					return nil
				})
			}
		})
	}
}

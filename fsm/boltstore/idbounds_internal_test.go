package boltstore

import (
	"encoding/binary"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

func boundKey(tenant string, client uint32, seq uint64) []byte {
	var id fsm.EventID
	binary.BigEndian.PutUint32(id[4:], client)
	binary.BigEndian.PutUint64(id[8:], seq)
	return appendEventKey(nil, tenant, id)
}

// The bounds answer "absent" only at or above what a miss or a put
// taught them, per tenant and per client prefix, and stay within
// maxIDBounds.
func TestIDBounds_AnswersOnlyWhatTheyLearnt(t *testing.T) {
	b := newIDBounds(3)
	k := func(client uint32, seq uint64) []byte { return boundKey("t", client, seq) }
	const tl = 1
	if b.absent(k(1, 5), tl) {
		t.Fatal("absent before anything was learnt")
	}
	// A miss for client 1 seq 5 that stopped at client 2's first key:
	// client 1 has nothing at or above seq 5; the tenant has keys above.
	b.missed(k(1, 5), k(2, 1), tl)
	for _, tc := range []struct {
		name string
		key  []byte
		want bool
	}{
		{"the key missed", k(1, 5), true},
		{"above it, same client", k(1, 6), true},
		{"below it, same client", k(1, 4), false},
		{"another client", k(2, 9), false},
		{"another tenant", boundKey("u", 1, 9), false},
	} {
		if got := b.absent(tc.key, tl); got != tc.want {
			t.Errorf("%s: absent %v, want %v", tc.name, got, tc.want)
		}
	}
	b.put(k(1, 5), tl)
	if b.absent(k(1, 5), tl) {
		t.Error("absent after it was put")
	}
	if !b.absent(k(1, 6), tl) {
		t.Error("the next key of the client is not absent after a put")
	}
	// A miss at the end of the bucket bounds the tenant too.
	b.missed(k(3, 1), nil, tl)
	if !b.absent(k(9, 1), tl) || b.absent(k(2, 9), tl) {
		t.Error("tenant bound: want absent above client 3's key only")
	}
	b.missed(boundKey("u", 1, 1), nil, tl)
	b.missed(boundKey("v", 1, 1), nil, tl)
	if len(b.m) > 3 {
		t.Errorf("%d bounds kept, limit 3", len(b.m))
	}
	b.clear()
	if b.absent(k(9, 1), tl) {
		t.Error("absent after clear")
	}
}

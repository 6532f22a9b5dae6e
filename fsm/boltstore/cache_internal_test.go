package boltstore

import "testing"

// The lru keeps the max most recently used keys, reusing the least
// recent one's place once full.
func TestLRU_KeepsTheMostRecent(t *testing.T) {
	c := newLRU[int](2)
	c.put("a", 1)
	c.put("b", 2)
	c.get("a")    // b is now the least recent
	c.put("c", 3) // evicts b
	c.put("a", 10)
	for _, tc := range []struct {
		key  string
		want int
		ok   bool
	}{{"a", 10, true}, {"b", 0, false}, {"c", 3, true}} {
		if got, ok := c.get(tc.key); got != tc.want || ok != tc.ok {
			t.Errorf("get %s: %d %v, want %d %v", tc.key, got, ok, tc.want, tc.ok)
		}
	}
	if c.ll.Len() != 2 || len(c.m) != 2 {
		t.Errorf("%d elements, %d keys; want 2", c.ll.Len(), len(c.m))
	}
	c.forget("a")
	if _, ok := c.get("a"); ok || c.ll.Len() != 1 {
		t.Error("a is still there after forget")
	}
	c.clear()
	if _, ok := c.get("c"); ok || c.ll.Len() != 0 {
		t.Error("c is still there after clear")
	}
	none := newLRU[int](0)
	none.put("a", 1)
	if _, ok := none.get("a"); ok {
		t.Error("an lru of 0 keeps a value")
	}
}

package boltstore

// arena hands out the keys and values of one write transaction. bbolt
// keeps the slices given to Put until the transaction ends, so they must
// not be reused before; an arena carves them from a few large slabs and
// is reset, slabs kept, once the transaction has ended. Not safe for
// concurrent use.
type arena struct {
	slabs [][]byte
	cur   int // slab in use
	off   int // first free byte of slabs[cur]
	used  int // bytes handed out since reset
}

const (
	slabBytes = 256 << 10
	// maxKeptSlabs bounds what reset keeps for the next transaction.
	maxKeptSlabs = 64
)

// room returns an empty slice with capacity for at least n bytes, to
// append an encoding to; keep then claims what was appended.
func (a *arena) room(n int) []byte {
	if n > slabBytes/4 {
		return make([]byte, 0, n)
	}
	if len(a.slabs) == 0 || slabBytes-a.off < n {
		a.next()
	}
	return a.slabs[a.cur][a.off:a.off:slabBytes]
}

func (a *arena) next() {
	if len(a.slabs) > 0 {
		a.cur++
	}
	if a.cur == len(a.slabs) {
		a.slabs = append(a.slabs, make([]byte, slabBytes))
	}
	a.off = 0
}

// keep claims b, the result of appending to the slice room returned last;
// call it before room is called again. If the append outgrew the room, b
// lives elsewhere and the slab is unchanged.
func (a *arena) keep(b []byte) []byte {
	a.used += len(b)
	if len(b) > 0 && len(a.slabs) > 0 && a.off < slabBytes && &b[0] == &a.slabs[a.cur][a.off] {
		a.off += len(b)
	}
	return b[:len(b):len(b)]
}

// bytes returns a copy of s in the arena.
func (a *arena) bytes(s string) []byte { return a.keep(append(a.room(len(s)), s...)) }

// reset makes every slab free again; nothing handed out may be in use.
func (a *arena) reset() {
	if len(a.slabs) > maxKeptSlabs {
		clear(a.slabs[maxKeptSlabs:])
		a.slabs = a.slabs[:maxKeptSlabs]
	}
	a.cur, a.off, a.used = 0, 0, 0
}

package fsm

import (
	"encoding/json"
	"unicode/utf8"
)

// jsonReader decodes the canonical JSON of events in one pass without
// reflection: exact-case keys, each once, no nulls, numbers in the form
// their Go field takes. Anything else sets bad and the caller falls back to
// encoding/json, which decides and explains; so the reader only has to
// agree with encoding/json on what it accepts, never on how it refuses.
type jsonReader struct {
	b   []byte
	i   int
	bad bool // the input left the subset (or is not JSON)
	// last holds the previous string of each slot: consecutive events of a
	// batch mostly repeat job, tenant, region and node, and reusing the
	// string saves an allocation per field.
	last [numStringSlots]string
}

// String slots of jsonReader.last.
const (
	slotJobID = iota
	slotTenant
	slotRegion
	slotNode
	slotName
	slotWorkflow
	slotWorker
	slotText
	numStringSlots
)

// peek skips JSON whitespace and returns the next byte, 0 at the end.
func (r *jsonReader) peek() byte {
	for ; r.i < len(r.b); r.i++ {
		switch c := r.b[r.i]; c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// expect consumes c, the next byte after whitespace.
func (r *jsonReader) expect(c byte) bool {
	if r.bad || r.peek() != c {
		r.bad = true
		return false
	}
	r.i++
	return true
}

// check leaves the subset on err.
func (r *jsonReader) check(err error) {
	if err != nil {
		r.bad = true
	}
}

// atEnd reports whether only whitespace is left.
func (r *jsonReader) atEnd() bool { return !r.bad && r.peek() == 0 && r.i == len(r.b) }

// plainByte marks the bytes a string holds as they are: not the quote,
// the backslash, control characters (invalid) or non-ASCII (to check).
var plainByte = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// text reads a string and returns its content: a view of the input when it
// has no escapes and is valid UTF-8, else what encoding/json makes of it.
func (r *jsonReader) text() []byte {
	if !r.expect('"') {
		return nil
	}
	start := r.i
	for r.i < len(r.b) && plainByte[r.b[r.i]] {
		r.i++
	}
	if r.i < len(r.b) && r.b[r.i] == '"' {
		r.i++
		return r.b[start : r.i-1]
	}
	escaped, high := false, false
	for r.i < len(r.b) {
		switch c := r.b[r.i]; {
		case c == '"':
			s := r.b[start:r.i]
			r.i++
			if !escaped && (!high || utf8.Valid(s)) {
				return s
			}
			return r.unquote(r.b[start-1 : r.i])
		case c == '\\':
			escaped = true
			r.i++ // the escaped byte cannot end the string
		case c < ' ':
			r.bad = true
			return nil
		case c >= utf8.RuneSelf:
			high = true
		}
		r.i++
	}
	r.bad = true
	return nil
}

// unquote decodes a quoted string with escapes or invalid UTF-8 exactly as
// encoding/json does (replacement characters included). Rare: not fast.
func (r *jsonReader) unquote(q []byte) []byte {
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		r.bad = true
		return nil
	}
	return []byte(s)
}

// str reads a string field, reusing the slot's previous string if equal.
func (r *jsonReader) str(slot int) string {
	b := r.text()
	if r.bad {
		return ""
	}
	if string(b) == r.last[slot] {
		return r.last[slot]
	}
	s := string(b)
	r.last[slot] = s
	return s
}

// key reads an object key and its colon. Keys with escapes or non-ASCII
// leave the subset: encoding/json would match them after unescaping and
// case folding.
func (r *jsonReader) key() []byte {
	if !r.expect('"') {
		return nil
	}
	start := r.i
	for r.i < len(r.b) && plainByte[r.b[r.i]] {
		r.i++
	}
	if r.i == len(r.b) || r.b[r.i] != '"' {
		r.bad = true
		return nil
	}
	k := r.b[start:r.i]
	r.i++
	r.expect(':')
	return k
}

// object reads {...}: member decodes the value of key and returns the
// field's number (below 64), or -1 for a key outside the subset. A repeated
// key leaves the subset (encoding/json would merge or overwrite).
func (r *jsonReader) object(member func(key []byte) int) {
	if !r.expect('{') {
		return
	}
	if r.peek() == '}' {
		r.i++
		return
	}
	var seen uint64
	for !r.bad {
		k := r.key()
		if r.bad {
			return
		}
		f := member(k)
		if r.bad || f < 0 || seen&(1<<f) != 0 {
			r.bad = true
			return
		}
		seen |= 1 << f
		if !r.next('}') {
			return
		}
	}
}

// array reads [...], calling elem for each element.
func (r *jsonReader) array(elem func()) {
	if !r.expect('[') {
		return
	}
	if r.peek() == ']' {
		r.i++
		return
	}
	for !r.bad {
		elem()
		if r.bad || !r.next(']') {
			return
		}
	}
}

// next consumes a comma (true: another member follows) or end.
func (r *jsonReader) next(end byte) bool {
	switch r.peek() {
	case ',':
		r.i++
		return true
	case end:
		r.i++
	default:
		r.bad = true
	}
	return false
}

// skipObject skips an object without decoding it and returns where it
// starts. It only finds the end: the object is decoded from its start later.
func (r *jsonReader) skipObject() int {
	if r.peek() != '{' {
		r.bad = true
		return 0
	}
	start, depth, inString := r.i, 0, false
	for ; r.i < len(r.b); r.i++ {
		c := r.b[r.i]
		switch {
		case inString && c == '\\':
			r.i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth--; depth == 0 {
				r.i++
				return start
			}
		}
	}
	r.bad = true
	return 0
}

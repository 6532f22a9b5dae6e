package fsm

import (
	"math"
	"strconv"
)

// Numbers and booleans of jsonReader: each Go field type takes the JSON
// forms encoding/json decodes into it without error; others leave the
// subset (and encoding/json refuses them).

// digits consumes one or more decimal digits.
func (r *jsonReader) digits() {
	start := r.i
	for r.i < len(r.b) && '0' <= r.b[r.i] && r.b[r.i] <= '9' {
		r.i++
	}
	if r.i == start {
		r.bad = true
	}
}

// number reads a JSON number and reports whether it is an integer (no
// fraction, no exponent). The caller's next expect refuses what follows
// a number that JSON does not allow ("01", "1x").
func (r *jsonReader) number() (lit []byte, integer bool) {
	if r.bad {
		return nil, false
	}
	r.peek()
	start := r.i
	if r.i < len(r.b) && r.b[r.i] == '-' {
		r.i++
	}
	if r.i < len(r.b) && r.b[r.i] == '0' {
		r.i++
	} else {
		r.digits()
	}
	integer = true
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		r.digits()
		integer = false
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		r.digits()
		integer = false
	}
	if r.bad {
		return nil, false
	}
	return r.b[start:r.i], integer
}

// magnitude parses the digits of an integer literal, at most max.
func (r *jsonReader) magnitude(digits []byte, max uint64) uint64 {
	var n uint64
	for _, c := range digits {
		d := uint64(c - '0')
		if n > (max-d)/10 {
			r.bad = true
			return 0
		}
		n = n*10 + d
	}
	return n
}

// uint reads an unsigned integer of the given bits; encoding/json refuses
// signs, fractions, exponents and overflow for unsigned fields.
func (r *jsonReader) uint(bits int) uint64 {
	lit, integer := r.number()
	if !integer || lit[0] == '-' {
		r.bad = true
		return 0
	}
	return r.magnitude(lit, math.MaxUint64>>(64-bits))
}

// int64 reads a signed 64-bit integer.
func (r *jsonReader) int64() int64 {
	lit, integer := r.number()
	if !integer {
		r.bad = true
		return 0
	}
	if lit[0] == '-' {
		return -int64(r.magnitude(lit[1:], 1<<63))
	}
	return int64(r.magnitude(lit, math.MaxInt64))
}

// float64 reads any number as strconv.ParseFloat does for encoding/json.
func (r *jsonReader) float64() float64 {
	lit, _ := r.number()
	if r.bad {
		return 0
	}
	if len(lit) == 1 && lit[0] == '0' {
		return 0
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	r.check(err)
	return f
}

// boolean reads true or false.
func (r *jsonReader) boolean() bool {
	switch r.peek() {
	case 't':
		return r.literal("true")
	case 'f':
		r.literal("false")
		return false
	}
	r.bad = true
	return false
}

func (r *jsonReader) literal(lit string) bool {
	if len(r.b)-r.i < len(lit) || string(r.b[r.i:r.i+len(lit)]) != lit {
		r.bad = true
		return false
	}
	r.i += len(lit)
	return true
}

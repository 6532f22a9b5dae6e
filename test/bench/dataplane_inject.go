package bench

import "math/rand/v2"

// Injector damages a stream of data-plane frames at the sender, the way a
// bad network would: each frame is lost with probability Loss, else sent
// twice with probability Dup; with Reorder, a random half of each round's
// frames is held back and sent after the next round's, so older
// cumulative counters arrive after newer ones. Counters are cumulative, so
// none of this may change the totals the ledger ends with (FORMAT.md,
// "Folding"). Not safe for concurrent use: one per worker.
type Injector struct {
	Loss, Dup float64
	Reorder   bool
	rng       *rand.Rand
	held      [][]byte // frames held back for after the next round
}

// InjectStats counts what an Injector did.
type InjectStats struct {
	Lost, Duplicated, Held int64
}

// NewInjector returns an injector drawing from a generator seeded with
// seed; nil when it would do nothing (no loss, no dup, no reorder), so the
// sender can skip the copies it needs.
func NewInjector(loss, dup float64, reorder bool, seed uint64) *Injector {
	if loss == 0 && dup == 0 && !reorder {
		return nil
	}
	return &Injector{Loss: loss, Dup: dup, Reorder: reorder, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Round takes one round's frames (the injector keeps them: the caller
// passes copies) and returns those to send now, in order: the frames
// held back from the previous round follow this round's survivors, and
// with Reorder a random half of this round's survivors is held for the
// next call. st counts the damage.
func (in *Injector) Round(frames [][]byte, st *InjectStats) [][]byte {
	out := make([][]byte, 0, len(frames)+len(in.held))
	var keep [][]byte
	for _, f := range frames {
		if in.Loss > 0 && in.rng.Float64() < in.Loss {
			st.Lost++
			continue
		}
		copies := 1
		if in.Dup > 0 && in.rng.Float64() < in.Dup {
			st.Duplicated++
			copies = 2
		}
		for range copies {
			if in.Reorder && in.rng.IntN(2) == 0 {
				keep = append(keep, f)
				st.Held++
				continue
			}
			out = append(out, f)
		}
	}
	out = append(out, in.held...)
	in.held = keep
	return out
}

// Flush returns the frames still held back, and holds none.
func (in *Injector) Flush() [][]byte {
	out := in.held
	in.held = nil
	return out
}

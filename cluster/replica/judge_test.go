package replica

import (
	"testing"

	"github.com/strata-ledger/strata/antientropy"
	"github.com/strata-ledger/strata/antientropy/ledgertree"
)

func cp(index uint64, root byte) ledgertree.Checkpoint {
	return ledgertree.Checkpoint{Index: index, Root: antientropy.Hash{root}}
}

func TestJudge(t *testing.T) {
	type peers = map[string][]ledgertree.Checkpoint
	self := []ledgertree.Checkpoint{cp(10, 1), cp(20, 2)}
	tests := []struct {
		name  string
		self  []ledgertree.Checkpoint
		peers peers
		size  int
		want  State
		index uint64
	}{
		{"alone", nil, nil, 1, Verified, 0},
		{"no group yet", nil, nil, 0, Verified, 0},
		{"nothing shared", self, peers{"b": {cp(30, 3)}}, 3, Unverified, 0},
		{"no checkpoint yet", nil, peers{"b": {cp(10, 1)}}, 3, Unverified, 0},
		{"agrees at the newest shared", self, peers{"b": {cp(20, 2)}, "c": {cp(10, 1)}}, 3, Verified, 20},
		{"both others agree on another root", self, peers{"b": {cp(20, 9)}, "c": {cp(20, 9)}}, 3, Divergent, 20},
		{"one other of two differs: it may be the damaged one", self, peers{"b": {cp(20, 9)}}, 3, Unverified, 20},
		{"the only other member differs", self, peers{"b": {cp(20, 9)}}, 2, Divergent, 20},
		{"one agrees, one differs: the other is damaged", self, peers{"b": {cp(20, 2)}, "c": {cp(20, 9)}}, 3, Verified, 20},
		{"others disagree among themselves", self, peers{"b": {cp(20, 8)}, "c": {cp(20, 9)}}, 3, Unverified, 20},
		{"an old agreement does not hide a new divergence", self,
			peers{"b": {cp(10, 1), cp(20, 9)}, "c": {cp(10, 1), cp(20, 9)}}, 3, Divergent, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.self, tt.peers, tt.size)
			if v.State != tt.want || v.Index != tt.index || v.Reason == "" {
				t.Fatalf("%+v, want %s at %d", v, tt.want, tt.index)
			}
		})
	}
}

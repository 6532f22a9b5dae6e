package importcheck

import "testing"

func TestMatches(t *testing.T) {
	tests := []struct {
		name, path, rule string
		want             bool
	}{
		{"std", "net/http", Std, true},
		{"not std", "github.com/hashicorp/raft", Std, false},
		{"itself", Module + "/fsm", Module + "/fsm", true},
		{"below is not itself", Module + "/fsm/boltstore", Module + "/fsm", false},
		{"below a tree", Module + "/fsm/boltstore", Module + "/fsm/...", true},
		{"the tree's root", Module + "/fsm", Module + "/fsm/...", true},
		{"prefix of a name is not below", Module + "/fsmx", Module + "/fsm/...", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := matches(tt.path, tt.rule); got != tt.want {
				t.Fatalf("matches(%q, %q) = %v, want %v", tt.path, tt.rule, got, tt.want)
			}
		})
	}
}

// The checks fail where they should: this package imports the standard
// library only, so Only(Std) passes and Never(Std) reports its imports.
func TestOnlyAndNever(t *testing.T) {
	Only(t, ".", Std)
	ft := &recorder{TB: t}
	Never(ft, ".", Std)
	if ft.errors == 0 {
		t.Fatal("Never(Std) found nothing in a package that imports the standard library")
	}
}

type recorder struct {
	testing.TB
	errors int
}

func (r *recorder) Errorf(string, ...any) { r.errors++ }
func (r *recorder) Helper()               {}

package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/strata-ledger/strata/fsm"
)

func ndjsonOf(t *testing.T, b []byte) ([]byte, NDJSONManifest) {
	t.Helper()
	var out bytes.Buffer
	m, err := WriteNDJSON(&out, Source{Name: "in.bundle", R: bytes.NewReader(b), Size: int64(len(b))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), m
}

func TestNDJSON_SortedByHLCEveryLineJSONManifestLast(t *testing.T) {
	chain := genChain(t, 8, 3000)
	out, m := ndjsonOf(t, writeBundle(t, chain, nil))
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(chain)+1 || m.Count != uint64(len(chain)) {
		t.Fatalf("%d lines for %d events, manifest %+v", len(lines), len(chain), m)
	}
	var prev fsm.EventKey
	late := 0
	for i, l := range lines[:len(lines)-1] {
		var line ndjsonLine
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		k := line.Event.Key()
		if i > 0 && !prev.Less(k) {
			t.Fatalf("line %d out of HLC order", i)
		}
		if line.Seq != uint64(i+1) {
			late++
		}
		prev = k
	}
	var last map[string]json.RawMessage
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last["manifest"] == nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	rep, err := VerifyNDJSON(bytes.NewReader(out))
	if err != nil || rep.Lines != uint64(len(chain)) || rep.Head.Link != chain[len(chain)-1].Link {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	t.Logf("%d lines, %d not in seq order", len(chain), late)
}

func TestVerifyNDJSON_FindsDamage(t *testing.T) {
	chain := genChain(t, 9, 2000)
	out, _ := ndjsonOf(t, writeBundle(t, chain, nil))
	lines := strings.SplitAfter(string(out), "\n")
	lines = lines[:len(lines)-1] // the empty string after the last newline
	join := func(ls []string) []byte { return []byte(strings.Join(ls, "")) }
	tests := []struct {
		name  string
		in    []byte
		part  string
		field string
	}{
		{"lines swapped", join(append(append(append([]string{}, lines[:3]...), lines[4], lines[3]), lines[5:]...)), PartLine, "order"},
		{"line removed", join(append(append([]string{}, lines[:3]...), lines[4:]...)), PartManifest, "sha256"},
		{"body changed", []byte(strings.Replace(string(out), `"completed":`, `"completed":1`, 1)), PartLine, "body_hash"},
		{"link changed", []byte(strings.Replace(string(out), `"link":"`, `"link":"0`, 1)), PartLine, "json"},
		{"truncated", out[:len(out)-30], PartLine, "truncated"},
		{"no manifest", join(lines[:len(lines)-1]), PartFile, "truncated"},
		{"not JSON", append([]byte("{x\n"), out...), PartLine, "json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := VerifyNDJSON(bytes.NewReader(tt.in))
			var be *BreakError
			if !errors.As(err, &be) || be.Part != tt.part || be.Field != tt.field {
				t.Fatalf("err = %v, want part %s field %s", err, tt.part, tt.field)
			}
			t.Log(err)
		})
	}
}

// TestIndexRecords_SizesAreWhatTheDocsSay: the per-entry memory of Merge
// and WriteNDJSON (besides its lines) that their docs and FORMAT.md state.
func TestIndexRecords_SizesAreWhatTheDocsSay(t *testing.T) {
	if got := unsafe.Sizeof(mergeRecord{}); got != mergeRecordBytes {
		t.Errorf("mergeRecord is %d bytes, documented %d", got, mergeRecordBytes)
	}
	if got := unsafe.Sizeof(lineRec{}); got != lineRecBytes {
		t.Errorf("lineRec is %d bytes, documented %d", got, lineRecBytes)
	}
}

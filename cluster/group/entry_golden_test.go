package group

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/internal/golden"
)

// goldenEntryBatches are the two batches of the golden entry of FORMAT.md:
// real fsm batches of one event each (goldenEntryEvents), written out as
// literal bytes so the envelope's golden bytes do not depend on fsm's
// encoder; TestEntryFormat_GoldenBatchesAreFSMBatches ties them to it.
var goldenEntryBatches = [][]byte{
	mustHex("01" + "01" + "37000000" + // batch version, 1 event, 55-byte frame
		"0140" + "53747261746100000000000000000001" + // event version, WorkerJoined, id
		"008cd1f58c010000" + "00000000" + "01000000" + "00" + // hlc, fence
		"00" + "00" + "0475736531" + "046d677231" + // job_id, tenant, region, node
		"04000000" + "02773108"), // body: worker "w1", capacity 8
	mustHex("01" + "01" + "3c000000" + // batch version, 1 event, 60-byte frame
		"0141" + "53747261746100000000000000000002" + // event version, WorkerLeft, id
		"018cd1f58c010000" + "00000000" + "01000000" + "00" + // hlc, fence
		"00" + "00" + "0475736531" + "046d677231" + // job_id, tenant, region, node
		"09000000" + "027731" + "05647261696e"), // body: worker "w1", reason "drain"
}

// goldenEntryEvents are the events of goldenEntryBatches, one per batch.
func goldenEntryEvents() []fsm.Event {
	return []fsm.Event{
		fsmtest.NewEvent(fsmtest.ID(1), "", "", "use1", "mgr1", fsmtest.TS(1704931200000, 0, 1), 0,
			&fsm.WorkerJoined{Worker: "w1", Capacity: 8}),
		fsmtest.NewEvent(fsmtest.ID(2), "", "", "use1", "mgr1", fsmtest.TS(1704931200001, 0, 1), 0,
			&fsm.WorkerLeft{Worker: "w1", Reason: "drain"}),
	}
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// readFormat returns FORMAT.md.
func readFormat(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

// goldenEntryBytes returns the bytes of the golden block marked name in
// FORMAT.md (internal/golden).
func goldenEntryBytes(t *testing.T, name string) []byte { return golden.Bytes(t, "FORMAT.md", name) }

func TestEntryFormat_GoldenEntryMatchesFORMAT(t *testing.T) {
	want := goldenEntryBytes(t, "entry")
	got := AppendEntry(nil, goldenEntryBatches)
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded entry\n% x\nFORMAT.md says\n% x", got, want)
	}
	if len(got) != 131 || EncodedEntryLen(goldenEntryBatches) != len(got) {
		t.Fatalf("encoded %d bytes, EncodedEntryLen %d, FORMAT.md says 131", len(got), EncodedEntryLen(goldenEntryBatches))
	}
	// The envelope is the first three bytes and each batch's length.
	if want[0] != EntryVersion || want[1] != 2 || want[2] != 61 || want[3+61] != 66 {
		t.Fatalf("envelope bytes % x … % x", want[:3], want[3+61])
	}
	batches, err := DecodeEntry(want)
	if err != nil {
		t.Fatalf("DecodeEntry(golden): %v", err)
	}
	if !slices.EqualFunc(batches, goldenEntryBatches, bytes.Equal) {
		t.Fatalf("DecodeEntry(golden) = % x, want % x", batches, goldenEntryBatches)
	}
	for i, b := range batches {
		if n, err := batchEventCount(b); n != 1 || err != nil {
			t.Errorf("batch %d: batchEventCount = %d, %v; want 1 event", i, n, err)
		}
	}
}

func TestEntryFormat_GoldenBatchesAreFSMBatches(t *testing.T) {
	for i, e := range goldenEntryEvents() {
		b, err := fsm.EncodeBatch([]fsm.Event{e})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, goldenEntryBatches[i]) {
			t.Fatalf("fsm.EncodeBatch of golden event %d\n% x\ngolden batch\n% x", i, b, goldenEntryBatches[i])
		}
		evs, err := fsm.DecodeBatch(goldenEntryBatches[i])
		if err != nil || len(evs) != 1 || evs[0].ID != e.ID || evs[0].Type != e.Type || evs[0].HLC != e.HLC {
			t.Fatalf("fsm.DecodeBatch(golden batch %d) = %+v, %v", i, evs, err)
		}
	}
}

// TestEntryFormat_ConstantsMatchFORMAT checks the constants and the refused
// examples FORMAT.md states.
func TestEntryFormat_ConstantsMatchFORMAT(t *testing.T) {
	doc := readFormat(t)
	for _, s := range []string{
		"`EntryVersion`, 1", "1 ≤ count ≤ 4,096 (`MaxEntryBatches`)", "| `MaxEntryBytes` | 1,048,592 bytes",
		"| `MaxEntryBatches` | 4,096 |", "| `MaxEntryEvents` | 10,000 (`fsm.MaxBatchEvents`)",
		"2 ≤ length ≤ 1,048,576 (`fsm.MaxBatchBytes`)", "`fsm.BatchVersion`, 1",
		"1 ≤ count ≤ 10,000 (`fsm.MaxBatchEvents`)", "**`ErrBadEntry`** (`cluster: malformed raft entry`)",
		"Never change the meaning of\na version",
	} {
		if !strings.Contains(doc, s) {
			t.Errorf("FORMAT.md does not say %q", s)
		}
	}
	if EntryVersion != 1 || MaxEntryBatches != 4096 || MaxEntryBytes != 1_048_592 || MaxEntryEvents != 10_000 ||
		fsm.MaxBatchBytes != 1_048_576 || fsm.MaxBatchEvents != 10_000 || fsm.BatchVersion != 1 ||
		minEntryBatchBytes != 2 || ErrBadEntry.Error() != "cluster: malformed raft entry" {
		t.Fatal("a constant differs from FORMAT.md")
	}
	// The examples of the decoding table: every one is refused.
	rows := regexp.MustCompile("(?m)^\\| [^|]+ \\| (`[0-9a-f ]+`(?:, `[0-9a-f ]+`)*) \\|$").FindAllStringSubmatch(doc, -1)
	if len(rows) < 6 {
		t.Fatalf("found %d example rows in FORMAT.md's decoding table", len(rows))
	}
	for _, row := range rows {
		for _, ex := range strings.Split(row[1], ", ") {
			data := mustHex(strings.ReplaceAll(strings.Trim(ex, "`"), " ", ""))
			if _, err := DecodeEntry(data); !errors.Is(err, ErrBadEntry) {
				t.Errorf("FORMAT.md example %s: DecodeEntry = %v, want ErrBadEntry", ex, err)
			}
		}
	}
	if _, err := DecodeEntry(nil); !errors.Is(err, ErrBadEntry) {
		t.Errorf("empty entry: %v", err)
	}
	if _, err := DecodeEntry(append(AppendEntry(nil, [][]byte{{1}}), make([]byte, MaxEntryBytes)...)); !errors.Is(err, ErrBadEntry) {
		t.Errorf("entry over MaxEntryBytes: %v", err)
	}
}

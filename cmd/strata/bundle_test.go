package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/bundle"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// testChain is tenant acme's chain after n events of fsmtest.Gen(seed)
// applied to a memstore ledger.
func testChain(t *testing.T, seed uint64, n int) []*fsm.StoredEvent {
	t.Helper()
	st := memstore.New()
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	g := fsmtest.NewGen(seed)
	batch := make([]fsm.Event, n)
	for i := range batch {
		batch[i] = g.Next()
	}
	if _, err := led.Apply(1, batch); err != nil {
		t.Fatal(err)
	}
	var chain []*fsm.StoredEvent
	st.View(func(tx fsm.ReadTx) error {
		return tx.ChainEvents("acme", 0, func(se *fsm.StoredEvent) error {
			chain = append(chain, se)
			return nil
		})
	})
	return chain
}

// writeTestBundle writes events as a bundle file; rechain recomputes
// their chain (a subset of a ledger's chain).
func writeTestBundle(t *testing.T, path string, events []*fsm.StoredEvent, rechain bool, signer []byte) {
	t.Helper()
	var buf bytes.Buffer
	w, err := bundle.NewWriter(&buf, bundle.WriterConfig{Tenant: "acme", CreatedAt: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC),
		CreatedBy: "use1-gate1", Rechain: rechain, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	for _, se := range events {
		if err := w.Append(se); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBundleKeygen_WritesAKeyPairAndRefusesToOverwrite(t *testing.T) {
	dir := isolate(t)
	out, errOut, code := runCLI(t, "", "bundle", "keygen", "-o", "k")
	wantCode(t, code, exitOK, errOut)
	st, err := os.Stat(filepath.Join(dir, "k.key"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("k.key: %v, mode %v", err, st.Mode())
	}
	privPEM, _ := os.ReadFile("k.key")
	pubPEM, _ := os.ReadFile("k.pub")
	priv, err := bundle.ParsePrivateKey(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := bundle.ParsePublicKey(pubPEM)
	if err != nil || !pub.Equal(priv.Public()) {
		t.Fatalf("k.pub: %v", err)
	}
	if !strings.Contains(out, bundle.KeyID(pub)) {
		t.Errorf("stdout %q lacks the key id", out)
	}
	_, errOut, code = runCLI(t, "", "bundle", "keygen", "-o", "k")
	wantCode(t, code, exitError, errOut)
	if again, _ := os.ReadFile("k.key"); !bytes.Equal(again, privPEM) {
		t.Fatal("keygen overwrote k.key")
	}
	_, errOut, code = runCLI(t, "", "bundle", "keygen")
	wantCode(t, code, exitUsage, errOut)
}

func TestBundleVerify_ExitCodesAndMessages(t *testing.T) {
	isolate(t)
	runCLI(t, "", "bundle", "keygen", "-o", "k")
	runCLI(t, "", "bundle", "keygen", "-o", "other")
	priv, _ := bundle.ParsePrivateKey(must(os.ReadFile("k.key")))
	chain := testChain(t, 1, 2000)
	writeTestBundle(t, "good.bundle", chain, false, priv)

	out, errOut, code := runCLI(t, "", "bundle", "verify", "good.bundle", "--pubkey", "k.pub")
	wantCode(t, code, exitOK, errOut)
	for _, want := range []string{"ok", "acme", "trusted key given", "seq " + itoa(len(chain))} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	out, errOut, code = runCLI(t, "", "bundle", "verify", "good.bundle")
	wantCode(t, code, exitOK, errOut)
	if !strings.Contains(out, "not checked against a trusted key") {
		t.Errorf("stdout:\n%s", out)
	}

	_, errOut, code = runCLI(t, "", "bundle", "verify", "good.bundle", "--pubkey", "other.pub")
	wantCode(t, code, exitError, errOut)
	if !strings.Contains(errOut, "signature") || !strings.Contains(errOut, "not signed by key") {
		t.Errorf("wrong key: stderr %q", errOut)
	}

	// A deliberate change: entry 3's link, with its CRC fixed up.
	b := must(os.ReadFile("good.bundle"))
	tampered := tamperLink(t, b, 3)
	os.WriteFile("bad.bundle", tampered, 0o644)
	out, errOut, code = runCLI(t, "", "bundle", "verify", "bad.bundle")
	wantCode(t, code, exitError, errOut)
	want := "entry 3 (seq 4, event " + chain[3].ID.String() + "): link"
	if !strings.Contains(errOut, want) || !strings.Contains(out, "FAILED") {
		t.Errorf("stderr %q lacks %q; stdout %q", errOut, want, out)
	}
	out, errOut, code = runCLI(t, "", "bundle", "verify", "bad.bundle", "-o", "json")
	wantCode(t, code, exitError, errOut)
	var res struct {
		OK    bool `json:"ok"`
		Error struct {
			Part    string `json:"part"`
			Index   int    `json:"index"`
			Seq     uint64 `json:"seq"`
			EventID string `json:"event_id"`
			Field   string `json:"field"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.OK || res.Error.Part != "entry" || res.Error.Index != 3 || res.Error.Seq != 4 || res.Error.EventID != chain[3].ID.String() || res.Error.Field != "link" {
		t.Errorf("json %+v", res)
	}

	os.WriteFile("short.bundle", b[:len(b)/2], 0o644)
	_, errOut, code = runCLI(t, "", "bundle", "verify", "short.bundle")
	wantCode(t, code, exitError, errOut)
	if !strings.Contains(errOut, "truncated") {
		t.Errorf("truncated: stderr %q", errOut)
	}
	_, errOut, code = runCLI(t, "", "bundle", "verify", "missing.bundle")
	wantCode(t, code, exitError, errOut)
	_, errOut, code = runCLI(t, "", "bundle", "verify")
	wantCode(t, code, exitUsage, errOut)
	_, errOut, code = runCLI(t, "", "bundle", "verify", "good.bundle", "-o", "yaml")
	wantCode(t, code, exitUsage, errOut)
	_, errOut, code = runCLI(t, "", "bundle", "verify", "good.bundle", "--pubkey", "k.key")
	wantCode(t, code, exitUsage, errOut)
}

// tamperLink flips a bit of entry index's stored link and fixes its CRC.
func tamperLink(t *testing.T, b []byte, index int) []byte {
	t.Helper()
	b = bytes.Clone(b)
	off := len(bundle.Magic) + 1
	for range index {
		off += 5 + int(le32(b[off+1:])) + 4
	}
	n := int(le32(b[off+1:]))
	// frame header 5, prev link 32, record version 1, seq uvarint (1 byte below 128).
	b[off+5+32+1+1+3] ^= 1
	crc := crc32c(b[off : off+5+n])
	copy(b[off+5+n:], []byte{byte(crc), byte(crc >> 8), byte(crc >> 16), byte(crc >> 24)})
	return b
}

func TestBundleMerge_OrderIndependentAndRefusesConflicts(t *testing.T) {
	isolate(t)
	chain := testChain(t, 2, 2000)
	half := len(chain) / 2
	writeTestBundle(t, "a.bundle", chain[:half+10], true, nil)
	writeTestBundle(t, "b.bundle", chain[half-10:], true, nil)
	out, errOut, code := runCLI(t, "", "bundle", "merge", "a.bundle", "b.bundle", "-o", "ab.bundle")
	wantCode(t, code, exitOK, errOut)
	if !strings.Contains(out, "20 duplicates dropped") || !strings.Contains(out, itoa(len(chain))+" written") {
		t.Errorf("stdout %q", out)
	}
	_, errOut, code = runCLI(t, "", "bundle", "merge", "b.bundle", "a.bundle", "-o", "ba.bundle")
	wantCode(t, code, exitOK, errOut)
	if !bytes.Equal(must(os.ReadFile("ab.bundle")), must(os.ReadFile("ba.bundle"))) {
		t.Fatal("merging b, a gave other bytes than a, b")
	}
	// The external merge (runs of 16 entries in --temp-dir) writes the
	// same bytes and leaves no file behind.
	tmp := t.TempDir()
	out, errOut, code = runCLI(t, "", "bundle", "merge", "a.bundle", "b.bundle", "-o", "ext.bundle", "--run-entries", "16", "--temp-dir", tmp)
	wantCode(t, code, exitOK, errOut)
	if !bytes.Equal(must(os.ReadFile("ab.bundle")), must(os.ReadFile("ext.bundle"))) || !strings.Contains(out, "sorted on disk") {
		t.Fatalf("the external merge gave other bytes: %s", out)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("%d temporary files left", len(left))
	}
	_, errOut, code = runCLI(t, "", "bundle", "verify", "ab.bundle")
	wantCode(t, code, exitOK, errOut)

	// The same event id with another body.
	var victim *fsm.StoredEvent
	for _, se := range chain {
		if _, ok := se.Body.(*fsm.JobProgressReported); ok {
			victim = se
			break
		}
	}
	other := *victim
	body := *victim.Body.(*fsm.JobProgressReported)
	body.Completed++
	other.Body = &body
	writeTestBundle(t, "c.bundle", []*fsm.StoredEvent{&other}, true, nil)
	_, errOut, code = runCLI(t, "", "bundle", "merge", "a.bundle", "b.bundle", "c.bundle", "-o", "abc.bundle")
	wantCode(t, code, exitError, errOut)
	if !strings.Contains(errOut, victim.ID.String()) || !strings.Contains(errOut, "c.bundle") {
		t.Errorf("stderr %q does not name the event and the input", errOut)
	}
	if _, err := os.Stat("abc.bundle"); !os.IsNotExist(err) {
		t.Errorf("a refused merge left abc.bundle: %v", err)
	}
	_, errOut, code = runCLI(t, "", "bundle", "merge", "a.bundle")
	wantCode(t, code, exitUsage, errOut)
}

func TestBundleMerge_SignedAndNDJSON(t *testing.T) {
	isolate(t)
	runCLI(t, "", "bundle", "keygen", "-o", "k")
	chain := testChain(t, 3, 1000)
	writeTestBundle(t, "a.bundle", chain, false, nil)
	_, errOut, code := runCLI(t, "", "bundle", "merge", "a.bundle", "-o", "s.bundle", "--sign", "k.key")
	wantCode(t, code, exitOK, errOut)
	_, errOut, code = runCLI(t, "", "bundle", "verify", "s.bundle", "--pubkey", "k.pub")
	wantCode(t, code, exitOK, errOut)
	_, errOut, code = runCLI(t, "", "bundle", "ndjson", "s.bundle", "-o", "s.ndjson", "--pubkey", "k.pub")
	wantCode(t, code, exitOK, errOut)
	out, errOut, code := runCLI(t, "", "bundle", "verify", "s.ndjson")
	wantCode(t, code, exitOK, errOut)
	if !strings.Contains(out, "ndjson") {
		t.Errorf("stdout %q", out)
	}
	lines := strings.Split(strings.TrimSpace(string(must(os.ReadFile("s.ndjson")))), "\n")
	if len(lines) != len(chain)+1 || !strings.HasPrefix(lines[len(lines)-1], `{"manifest":`) {
		t.Errorf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
	os.WriteFile("bad.ndjson", []byte(strings.Join(append([]string{lines[1], lines[0]}, lines[2:]...), "\n")+"\n"), 0o644)
	_, errOut, code = runCLI(t, "", "bundle", "verify", "bad.ndjson")
	wantCode(t, code, exitError, errOut)
	if !strings.Contains(errOut, "line 1") || !strings.Contains(errOut, "order") {
		t.Errorf("stderr %q", errOut)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func itoa(n int) string { return strconv.Itoa(n) }

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

func crc32c(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }

// A bundle that starts mid-chain (an HLC-range export) verifies, and the
// output says where it starts and that its first previous link is taken
// as given; the checkpoints verified are counted.
func TestBundleVerify_MidChainAndCheckpoints(t *testing.T) {
	isolate(t)
	chain := testChain(t, 3, 6000)
	if len(chain) < bundle.CheckpointEvents+20 {
		t.Skipf("chain of %d", len(chain))
	}
	from := 10
	var buf bytes.Buffer
	_, err := bundle.WriteChain(&buf, bundle.WriterConfig{Tenant: "acme", CreatedAt: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC), CreatedBy: "g1",
		Start: fsm.ChainHead{Seq: chain[from-1].Seq, Link: chain[from-1].Link}},
		func(fn func(*fsm.StoredEvent) error) error {
			for _, se := range chain[from:] {
				if err := fn(se); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("mid.bundle", buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "", "bundle", "verify", "mid.bundle")
	wantCode(t, code, exitOK, errOut)
	if !strings.Contains(out, "mid-chain, after seq "+itoa(from)) || !strings.Contains(out, "taken as given") {
		t.Fatalf("stdout %q", out)
	}
	writeTestBundle(t, "whole.bundle", chain, false, nil)
	out, errOut, code = runCLI(t, "", "bundle", "verify", "whole.bundle")
	wantCode(t, code, exitOK, errOut)
	if !strings.Contains(out, itoa(len(chain)/bundle.CheckpointEvents)+" verified") || !strings.Contains(out, "genesis") {
		t.Fatalf("stdout %q", out)
	}
}

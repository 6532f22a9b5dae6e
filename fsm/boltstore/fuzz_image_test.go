package boltstore_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path/filepath"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// FuzzRestoreImage: whatever follows a store-image header, RestoreImage
// never panics, and it either refuses the bytes (ErrSnapshot, the store
// unchanged) or installs a store whose state is exactly the image's.
func FuzzRestoreImage(f *testing.F) {
	src := ledgerOn(f, openStore(f, testConfig(f)))
	fsmtest.Drive(f, 9, src, fsmtest.NewModel(), 200, 0)
	mark := fsmtest.NewEvent(fsmtest.ID(1<<40), "", "", "use1", "mgr1", fsmtest.TS(1_800_000_000_000, 0, 1), 0,
		&fsm.ForwardMark{Marks: []fsm.ForwardPosition{{Tenant: "acme", Seq: 1 << 20}}})
	if _, err := src.Apply(src.AppliedIndex()+1, []fsm.Event{mark}); err != nil {
		f.Fatal(err)
	}
	var image bytes.Buffer
	if err := src.Snapshot(&image); err != nil {
		f.Fatal(err)
	}
	good := image.Bytes()
	f.Add(good[fsm.SnapshotHeaderLen:])
	f.Add(good[fsm.SnapshotHeaderLen : len(good)/2])
	f.Add([]byte{1, 2, 3})
	h, err := fsm.DecodeSnapshotHeader(good[:fsm.SnapshotHeaderLen])
	if err != nil {
		f.Fatal(err)
	}
	st := openStore(f, testConfig(f))
	led := ledgerOn(f, st)
	f.Fuzz(func(t *testing.T, body []byte) {
		before := state(t, led)
		err := st.RestoreImage(h, bytes.NewReader(body))
		if err != nil {
			if !errors.Is(err, fsm.ErrSnapshot) {
				t.Fatalf("refused with %v, want ErrSnapshot", err)
			}
			if !bytes.Equal(state(t, led), before) {
				t.Fatal("a refused image changed the store")
			}
			return
		}
		restored := ledgerOn(t, st)
		if d, _, _ := restored.Digest(); d != digestFrom(t, src) {
			t.Fatal("an accepted image holds another state")
		}
		if m, err := restored.ForwardMark("acme"); err != nil || m != 1<<20 {
			t.Fatalf("an accepted image holds forward mark %d (%v)", m, err)
		}
	})
}

func digestFrom(t testing.TB, led *fsm.Ledger) fsm.Hash {
	d, _, err := led.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// An image has the framing of FORMAT.md: header (kind 2), length, the
// bbolt file, ledger digest, CRC-32C of everything before it.
func TestWriteImage_HasTheDocumentedFraming(t *testing.T) {
	led := ledgerOn(t, openStore(t, testConfig(t)))
	applyLog(t, led, batches(10, 5, 10), 1, 5)
	var b bytes.Buffer
	if err := led.Snapshot(&b); err != nil {
		t.Fatal(err)
	}
	img := b.Bytes()
	h, err := fsm.DecodeSnapshotHeader(img[:32])
	if err != nil || h.Kind != fsm.SnapshotKindStoreImage || h.AppliedIndex != 5 {
		t.Fatalf("header %+v %v", h, err)
	}
	n := int(binary.LittleEndian.Uint64(img[32:]))
	if 40+n+36 != len(img) {
		t.Fatalf("image length %d in a snapshot of %d bytes", n, len(img))
	}
	if d := digestFrom(t, led); !bytes.Equal(img[40+n:40+n+32], d[:]) {
		t.Fatal("trailer digest is not the ledger digest")
	}
	if got, want := binary.LittleEndian.Uint32(img[len(img)-4:]), crc32.Checksum(img[:len(img)-4], crc32.MakeTable(crc32.Castagnoli)); got != want {
		t.Fatalf("CRC %08x, computed %08x", got, want)
	}
}

// A refused image leaves no file behind.
func TestRestoreImage_RefusedImageLeavesNoFile(t *testing.T) {
	cfg := testConfig(t)
	src := ledgerOn(t, openStore(t, cfg))
	applyLog(t, src, batches(11, 3, 10), 1, 3)
	var b bytes.Buffer
	if err := src.Snapshot(&b); err != nil {
		t.Fatal(err)
	}
	img := b.Bytes()
	dstCfg := inNewDir(t, cfg)
	dst := ledgerOn(t, openStore(t, dstCfg))
	for _, tc := range []struct {
		name string
		snap []byte
	}{
		{"truncated", img[:len(img)-10]},
		{"flipped", append(bytes.Clone(img[:100]), append([]byte{img[100] ^ 1}, img[101:]...)...)},
		{"trailing byte", append(bytes.Clone(img), 0)},
	} {
		if err := dst.Restore(bytes.NewReader(tc.snap)); !errors.Is(err, fsm.ErrSnapshot) {
			t.Fatalf("%s: %v, want ErrSnapshot", tc.name, err)
		}
		if left, _ := filepath.Glob(dstCfg.Path + ".restore-*"); len(left) > 0 {
			t.Fatalf("%s: left %v", tc.name, left)
		}
	}
}

package bundle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// span is one frame of a bundle.
type span struct {
	kind      byte
	off, size int
}

// frames lists the frames of a well-formed bundle.
func frames(t *testing.T, b []byte) []span {
	t.Helper()
	var out []span
	for off := len(Magic) + 1; off < len(b); {
		n := int(binary.LittleEndian.Uint32(b[off+1:]))
		out = append(out, span{kind: b[off], off: off, size: frameHeaderBytes + n + frameTrailerBytes})
		off += frameHeaderBytes + n + frameTrailerBytes
	}
	return out
}

// entryField is the offset in b of a field of the entry frame s.
func entryField(b []byte, s span, field string) int {
	payload := s.off + frameHeaderBytes
	rec := payload + 32
	_, vn := binary.Uvarint(b[rec+1:])
	ev := rec + 1 + vn + 64
	_, fn := binary.Uvarint(b[ev+34:])
	switch field {
	case "prev":
		return payload + 3
	case "link":
		return rec + 1 + vn + 5
	case "body_hash":
		return rec + 1 + vn + 32 + 5
	case "id":
		return ev + 2 + 7
	case "hlc":
		return ev + 18 + 1
	case "job":
		return ev + 34 + fn + 1 + 3
	case "body": // the body's last byte
		return s.off + s.size - frameTrailerBytes - 1
	}
	panic(field)
}

// fixCRC recomputes the CRC of frame s, as a deliberate tamperer would.
func fixCRC(b []byte, s span) {
	end := s.off + s.size - frameTrailerBytes
	binary.LittleEndian.PutUint32(b[end:], crc32.Checksum(b[s.off:end], castagnoli))
}

// rewrite replaces frame s's payload (CRC recomputed) and returns the new
// bundle.
func rewrite(b []byte, s span, payload []byte) []byte {
	f := []byte{s.kind, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(f[1:], uint32(len(payload)))
	f = append(f, payload...)
	f = binary.LittleEndian.AppendUint32(f, crc32.Checksum(f, castagnoli))
	return append(append(append([]byte{}, b[:s.off]...), f...), b[s.off+s.size:]...)
}

// TestVerify_TamperTable: every kind of damage is found and named: which
// part, which entry (index, and seq and event id once it decodes), which
// field. "Accidental" flips leave the CRC as it was; "deliberate" ones
// recompute it, so the chain checks themselves must find them.
func TestVerify_TamperTable(t *testing.T) {
	chain := append(genChain(t, 3, 2000), chainOf(t, applyAll(t, oneTenantStream(2*CheckpointEvents+100)), "acme")...)
	chain = chainOf(t, applyAll(t, eventsOf(chain)), "acme") // one chain: every event type, two batches
	if len(chain) < 2*CheckpointEvents {
		t.Fatalf("chain of %d events", len(chain))
	}
	good := writeBundle(t, chain, testKey())
	fs := frames(t, good)
	var cps []span // the checkpoint frames
	var ents []span
	for _, f := range fs {
		switch f.kind {
		case kindCheckpoint:
			cps = append(cps, f)
		case kindEntry:
			ents = append(ents, f)
		}
	}
	if len(cps) != 2 {
		t.Fatalf("%d checkpoints", len(cps))
	}
	entry := func(i int) span { return ents[i] }
	manifest, seal := fs[len(fs)-2], fs[len(fs)-1]
	checkpointJSON := func(i int, edit func(c *SignedCheckpoint)) func([]byte) []byte {
		return func(b []byte) []byte {
			c := cps[i]
			sc, err := DecodeCheckpoint(b[c.off+frameHeaderBytes : c.off+c.size-frameTrailerBytes])
			if err != nil {
				t.Fatal(err)
			}
			edit(&sc)
			cb, _ := json.Marshal(&sc)
			return rewrite(b, c, cb)
		}
	}
	flip := func(off int, fix *span) func([]byte) []byte {
		return func(b []byte) []byte {
			b[off] ^= 0x20
			if fix != nil {
				fixCRC(b, *fix)
			}
			return b
		}
	}
	e5, e7, e9 := entry(5), entry(7), entry(9)
	manifestJSON := func(edit func(m *Manifest)) func([]byte) []byte {
		return func(b []byte) []byte {
			var m Manifest
			if err := json.Unmarshal(b[manifest.off+frameHeaderBytes:manifest.off+manifest.size-frameTrailerBytes], &m); err != nil {
				t.Fatal(err)
			}
			edit(&m)
			mb, _ := json.Marshal(&m)
			return rewrite(b, manifest, mb)
		}
	}
	tests := []struct {
		name   string
		damage func([]byte) []byte
		part   string
		index  int
		fields []string // any of
		named  bool     // the break names the entry's seq and event id
	}{
		{"accidental: entry byte", flip(entryField(good, e5, "id"), nil), PartEntry, 5, []string{"crc"}, false},
		{"accidental: body byte", flip(entryField(good, e7, "body"), nil), PartEntry, 7, []string{"crc"}, false},
		{"accidental: link byte", flip(entryField(good, e9, "link"), nil), PartEntry, 9, []string{"crc"}, false},
		{"accidental: manifest byte", flip(manifest.off+frameHeaderBytes+20, nil), PartManifest, -1, []string{"crc"}, false},
		{"accidental: signature byte", flip(seal.off+seal.size-20, nil), PartSignature, -1, []string{"crc"}, false},
		{"deliberate: entry hlc", flip(entryField(good, e5, "hlc"), &e5), PartEntry, 5, []string{"link"}, true},
		{"deliberate: entry job id", flip(entryField(good, e5, "job"), &e5), PartEntry, 5, []string{"link", "decode"}, false},
		{"deliberate: entry event id (not in the link: the entries digest)", flip(entryField(good, e5, "id"), &e5), PartManifest, -1, []string{"entries_sha256"}, false},
		{"deliberate: body", flip(entryField(good, e7, "body"), &e7), PartEntry, 7, []string{"body_hash", "decode"}, false},
		{"deliberate: body hash", flip(entryField(good, e7, "body_hash"), &e7), PartEntry, 7, []string{"body_hash"}, true},
		{"deliberate: link", flip(entryField(good, e9, "link"), &e9), PartEntry, 9, []string{"link"}, true},
		{"deliberate: prev link", flip(entryField(good, e9, "prev"), &e9), PartEntry, 9, []string{"prev_link"}, true},
		{"deliberate: manifest field", manifestJSON(func(m *Manifest) { m.CreatedBy = "mallory" }), PartManifest, -1, []string{"digest"}, false},
		{"deliberate: signature byte", flip(seal.off+seal.size-frameTrailerBytes-8, &seal), PartSignature, -1, []string{"signature", "envelope"}, false},
		{"entry removed", func(b []byte) []byte {
			return append(append([]byte{}, b[:entry(4).off]...), b[entry(5).off:]...)
		}, PartEntry, 4, []string{"seq"}, true},
		{"entry duplicated", func(b []byte) []byte {
			e := entry(4)
			return append(append(append([]byte{}, b[:e.off+e.size]...), b[e.off:e.off+e.size]...), b[e.off+e.size:]...)
		}, PartEntry, 5, []string{"seq"}, true},
		{"entries reordered", func(b []byte) []byte {
			a, c := entry(4), entry(5)
			out := append([]byte{}, b[:a.off]...)
			out = append(out, b[c.off:c.off+c.size]...)
			out = append(out, b[a.off:a.off+a.size]...)
			return append(out, b[c.off+c.size:]...)
		}, PartEntry, 4, []string{"seq"}, true},
		{"truncated inside an entry", func(b []byte) []byte { return b[:entry(6).off+40] }, PartEntry, 6, []string{"truncated"}, false},
		{"truncated between entries", func(b []byte) []byte { return b[:entry(6).off] }, PartFile, -1, []string{"truncated"}, false},
		{"truncated before the seal", func(b []byte) []byte { return b[:seal.off] }, PartFile, -1, []string{"truncated"}, false},
		{"truncated inside the seal", func(b []byte) []byte { return b[:seal.off+10] }, PartSignature, -1, []string{"truncated"}, false},
		{"trailing data", func(b []byte) []byte { return append(b, 0) }, PartFile, -1, []string{"trailing"}, false},
		{"not a bundle", func(b []byte) []byte { b[0] = 'X'; return b }, PartHeader, -1, []string{"magic"}, false},
		{"accidental: checkpoint byte", flip(cps[1].off+frameHeaderBytes+30, nil), PartCheckpoint, 1, []string{"crc"}, false},
		{"deliberate: checkpoint root", checkpointJSON(0, func(c *SignedCheckpoint) { c.Root[3] ^= 1 }), PartCheckpoint, 0, []string{"root"}, false},
		{"deliberate: checkpoint prev link", checkpointJSON(1, func(c *SignedCheckpoint) { c.PrevLink[0] ^= 1 }), PartCheckpoint, 1, []string{"prev_link"}, false},
		{"deliberate: checkpoint last link", checkpointJSON(1, func(c *SignedCheckpoint) { c.LastLink[0] ^= 1 }), PartCheckpoint, 1, []string{"last_link"}, false},
		{"deliberate: checkpoint count", checkpointJSON(0, func(c *SignedCheckpoint) { c.LastSeq-- }), PartCheckpoint, 0, []string{"count"}, false},
		{"deliberate: checkpoint tenant", checkpointJSON(0, func(c *SignedCheckpoint) { c.Tenant = "globex" }), PartCheckpoint, 0, []string{"tenant"}, false},
		{"deliberate: checkpoint signature", checkpointJSON(1, func(c *SignedCheckpoint) { c.Signature[5] ^= 1 }), PartCheckpoint, 1, []string{"signature"}, false},
		{"checkpoint signed by a key the bundle does not carry", checkpointJSON(0, func(c *SignedCheckpoint) {
			*c = SignCheckpoint(c.Checkpoint, ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32)))
		}), PartCheckpoint, 0, []string{"signature"}, false},
		{"checkpoint signature stripped (the manifest covers it)", checkpointJSON(0, func(c *SignedCheckpoint) { c.KeyID, c.Signature = "", nil }),
			PartManifest, -1, []string{"checkpoints_sha256"}, false},
		{"checkpoint removed", func(b []byte) []byte {
			c := cps[0]
			return append(append([]byte{}, b[:c.off]...), b[c.off+c.size:]...)
		}, PartCheckpoint, 0, []string{"missing"}, false},
		{"checkpoint duplicated", func(b []byte) []byte {
			c := cps[0]
			return append(append(append([]byte{}, b[:c.off+c.size]...), b[c.off:c.off+c.size]...), b[c.off+c.size:]...)
		}, PartCheckpoint, 1, []string{"unexpected"}, false},
		{"checkpoint moved before its batch ends", func(b []byte) []byte {
			c, e := cps[0], entry(CheckpointEvents-1)
			out := append([]byte{}, b[:e.off]...)
			out = append(out, b[c.off:c.off+c.size]...)
			out = append(out, b[e.off:e.off+e.size]...)
			return append(out, b[c.off+c.size:]...)
		}, PartCheckpoint, 0, []string{"unexpected"}, false},
		{"manifest count rewritten and resealed", func(b []byte) []byte {
			b = manifestJSON(func(m *Manifest) { m.Count++ })(b)
			fs := frames(t, b)
			m, s := fs[len(fs)-2], fs[len(fs)-1]
			env, _ := Seal(sha256.Sum256(b[m.off+frameHeaderBytes:m.off+m.size-frameTrailerBytes]), testKey())
			eb, _ := json.Marshal(env)
			return rewrite(b, s, eb)
		}, PartManifest, -1, []string{"count"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.damage(bytes.Clone(good))
			_, err := Verify(bytes.NewReader(b), VerifyConfig{})
			var be *BreakError
			if !errors.As(err, &be) || !errors.Is(err, ErrBroken) {
				t.Fatalf("err = %v, want a *BreakError", err)
			}
			ok := false
			for _, f := range tt.fields {
				ok = ok || be.Field == f
			}
			if be.Part != tt.part || be.Index != tt.index || !ok {
				t.Fatalf("break %+v (%v), want part %s, index %d, field in %v", *be, err, tt.part, tt.index, tt.fields)
			}
			if tt.named && (be.EventID.IsZero() || be.Seq == 0) {
				t.Fatalf("break %v does not name the entry's seq and event id", err)
			}
			t.Log(err)
		})
	}
}

// eventsOf returns the events of a chain.
func eventsOf(chain []*fsm.StoredEvent) []fsm.Event {
	out := make([]fsm.Event, len(chain))
	for i, se := range chain {
		out[i] = se.Event
	}
	return out
}

package bundle

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// FuzzReadBundle: Verify never panics and allocates within its limits;
// a bundle it accepts, written again from what Verify read, verifies to
// the same entries and manifest.
func FuzzReadBundle(f *testing.F) {
	f.Add(goldenBundle(f))
	f.Add(writeBundle(f, genChain(f, 11, 300)[:5], nil))
	f.Add([]byte(Magic + "\x01"))
	mid := chainOf(f, applyAll(f, oneTenantStream(40)), "acme")
	f.Add(midChain(f, mid, 10, 20, &Range{From: mid[10].HLC, To: mid[10].HLC}, testKey()))
	f.Fuzz(func(t *testing.T, data []byte) {
		var entries []fsm.StoredEvent
		rep, err := Verify(bytes.NewReader(data), VerifyConfig{OnEntry: func(e *Entry) error {
			entries = append(entries, *e.Stored)
			return nil
		}})
		if err != nil {
			return
		}
		m := rep.Manifest
		created, _ := m.Created()
		var signer = testKey()
		if len(rep.Signers) == 0 {
			signer = nil
		}
		var buf bytes.Buffer
		w, err := NewWriter(&buf, WriterConfig{Tenant: m.Tenant, BundleID: m.BundleID, CreatedAt: created, CreatedBy: m.CreatedBy, Signer: signer,
			Start: rep.Start, Range: m.Range})
		if err != nil {
			t.Fatalf("accepted manifest %+v does not configure a writer: %v", m, err)
		}
		for i := range entries {
			if err := w.Append(&entries[i]); err != nil {
				t.Fatalf("accepted entry %d does not write: %v", i, err)
			}
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		rep2, err := Verify(bytes.NewReader(buf.Bytes()), VerifyConfig{})
		if err != nil || rep2.Head != rep.Head || rep2.Entries != rep.Entries || rep2.Manifest.EntriesSHA256 != m.EntriesSHA256 ||
			(rep.Version == Version && rep2.Checkpoints != rep.Checkpoints) {
			t.Fatalf("rewritten bundle: %+v, %v; was %+v", rep2, err, rep)
		}
	})
}

// FuzzReadNDJSON: VerifyNDJSON never panics and bounds its lines.
func FuzzReadNDJSON(f *testing.F) {
	b := goldenBundle(f)
	var nd bytes.Buffer
	if _, err := WriteNDJSON(&nd, Source{Name: "golden", R: bytes.NewReader(b), Size: int64(len(b))}, nil); err != nil {
		f.Fatal(err)
	}
	f.Add(nd.Bytes())
	f.Add([]byte("{\"manifest\":{}}\n"))
	f.Add([]byte("{\"seq\":99999999999}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := VerifyNDJSON(bytes.NewReader(data))
		if err == nil && rep.Manifest.Count != rep.Lines {
			t.Fatalf("accepted %d lines with a manifest count of %d", rep.Lines, rep.Manifest.Count)
		}
	})
}

// FuzzEnvelope: DecodeEnvelope never panics; what it accepts encodes and
// decodes back to the same envelope, and Open does not panic on it.
func FuzzEnvelope(f *testing.F) {
	env, _ := Seal([32]byte{1, 2, 3}, testKey())
	b, _ := json.Marshal(env)
	f.Add(b)
	unsigned, _ := Seal([32]byte{}, nil)
	b, _ = json.Marshal(unsigned)
	f.Add(b)
	f.Add([]byte(`{"payloadType":"x","payload":"","signatures":[{}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := DecodeEnvelope(data)
		if err != nil {
			return
		}
		again, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		env2, err := DecodeEnvelope(again)
		if err != nil || !reflect.DeepEqual(env, env2) {
			t.Fatalf("round trip %+v → %+v, %v", env, env2, err)
		}
		env.Open(nil)
		env.Open(testKey().Public().(ed25519PublicKey))
	})
}

// FuzzCheckpoint: DecodeCheckpoint never panics and bounds its input;
// what it accepts encodes and decodes back to the same checkpoint.
func FuzzCheckpoint(f *testing.F) {
	cp := Checkpoint{Tenant: "acme", FirstSeq: 1, LastSeq: CheckpointEvents, Root: fsm.Hash{1}}
	for _, sc := range []SignedCheckpoint{SignCheckpoint(cp, testKey()), SignCheckpoint(cp, nil)} {
		b, _ := json.Marshal(sc)
		f.Add(b)
	}
	f.Add([]byte(`{"key_id":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := DecodeCheckpoint(data)
		if err != nil {
			return
		}
		b, err := json.Marshal(sc)
		if err != nil {
			t.Fatal(err)
		}
		sc2, err := DecodeCheckpoint(b)
		if err != nil || !reflect.DeepEqual(sc, sc2) {
			t.Fatalf("round trip %+v → %+v, %v", sc, sc2, err)
		}
		if sc.KeyID != "" {
			_ = VerifyCheckpoint(sc, testKey().Public().(ed25519PublicKey))
		}
	})
}

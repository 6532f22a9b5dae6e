package bundle

import (
	"bytes"
	"crypto/ed25519"
	"testing"
)

// Resign (strata bundle export --sign) gives a bundle signed by the new
// key only, seal and checkpoints, with the entries, id, time, start and
// range of its source; a broken source is refused.
func TestResign(t *testing.T) {
	chain := chainOf(t, applyAll(t, oneTenantStream(2*CheckpointEvents+50)), "acme")
	gate := testKey()
	_, mine, err := GenerateKey(bytes.NewReader(bytes.Repeat([]byte{7}, 64)))
	if err != nil {
		t.Fatal(err)
	}
	minePub := mine.Public().(ed25519.PublicKey)
	rng := &Range{From: chain[300].HLC, To: chain[len(chain)-1].HLC}
	if rng.To.Less(rng.From) {
		rng.From, rng.To = rng.To, rng.From
	}
	for name, src := range map[string][]byte{
		"unsigned":           writeBundle(t, chain, nil),
		"signed by the gate": writeBundle(t, chain, gate),
		"mid-chain":          midChain(t, chain, 300, len(chain), rng, gate),
	} {
		t.Run(name, func(t *testing.T) {
			before, err := Verify(bytes.NewReader(src), VerifyConfig{})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if _, err := Resign(&out, bytes.NewReader(src), mine); err != nil {
				t.Fatal(err)
			}
			after, err := Verify(bytes.NewReader(out.Bytes()), VerifyConfig{PublicKey: minePub})
			if err != nil {
				t.Fatal(err)
			}
			bm, am := before.Manifest, after.Manifest
			if !after.Trusted || after.Checkpoints == 0 || after.CheckpointsSigned != after.Checkpoints ||
				am.BundleID != bm.BundleID || am.CreatedAt != bm.CreatedAt || am.CreatedBy != bm.CreatedBy ||
				am.EntriesSHA256 != bm.EntriesSHA256 || am.Start != bm.Start || am.ChainHead != bm.ChainHead ||
				(am.Range == nil) != (bm.Range == nil) {
				t.Fatalf("before %+v\nafter %+v", before, after)
			}
			if _, err := Verify(bytes.NewReader(out.Bytes()), VerifyConfig{PublicKey: gate.Public().(ed25519.PublicKey)}); err == nil {
				t.Fatal("the re-signed bundle still verifies with the gate's key")
			}
			tampered := bytes.Clone(src)
			tampered[len(tampered)/2] ^= 1
			if _, err := Resign(&bytes.Buffer{}, bytes.NewReader(tampered), mine); err == nil {
				t.Fatal("a tampered bundle was re-signed")
			}
		})
	}
	if _, err := Resign(&bytes.Buffer{}, bytes.NewReader(writeBundle(t, chain, nil)), mine[:10]); err == nil {
		t.Fatal("a short key signed")
	}
}

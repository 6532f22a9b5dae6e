package bundle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"strconv"
)

// Envelope is the seal of a bundle: a DSSE-style envelope whose payload
// is the 32-byte SHA-256 of the manifest frame's payload, with zero or
// more ed25519 signatures over PAE(PayloadType, Payload). Payload and
// signatures are standard base64 in JSON (encoding/json's []byte).
type Envelope struct {
	PayloadType string      `json:"payloadType"`
	Payload     []byte      `json:"payload"`
	Signatures  []Signature `json:"signatures"`
}

// Signature is one signature of an envelope. PublicKey is carried so a
// bundle verifies for integrity without a trusted key; only a check
// against a key the verifier holds (VerifyConfig.PublicKey) makes it
// authentic.
type Signature struct {
	KeyID     string `json:"keyid"`
	PublicKey []byte `json:"public_key"`
	Sig       []byte `json:"sig"`
}

// PAE is DSSE's pre-authentication encoding:
//
//	"DSSEv1" SP len(type) SP type SP len(body) SP body
//
// with lengths in ASCII decimal.
func PAE(payloadType string, body []byte) []byte {
	b := make([]byte, 0, 32+len(payloadType)+len(body))
	b = append(b, "DSSEv1 "...)
	b = strconv.AppendInt(b, int64(len(payloadType)), 10)
	b = append(b, ' ')
	b = append(b, payloadType...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, ' ')
	return append(b, body...)
}

// KeyID names a public key: the first 8 bytes of its SHA-256, hex.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// Seal returns the envelope over a manifest digest, signed by signer if
// it is not nil. ed25519 signatures are deterministic: equal digests and
// keys give equal envelopes.
func Seal(digest [32]byte, signer ed25519.PrivateKey) (*Envelope, error) {
	env := &Envelope{PayloadType: PayloadType, Payload: digest[:], Signatures: []Signature{}}
	if signer == nil {
		return env, nil
	}
	if len(signer) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w: private key of %d bytes", ErrKey, len(signer))
	}
	pub := signer.Public().(ed25519.PublicKey)
	env.Signatures = append(env.Signatures, Signature{KeyID: KeyID(pub), PublicKey: pub,
		Sig: ed25519.Sign(signer, PAE(env.PayloadType, env.Payload))})
	return env, nil
}

// DecodeEnvelope reads an envelope's JSON strictly (no unknown fields, no
// trailing data), bounded by MaxEnvelopeBytes and MaxSignatures.
func DecodeEnvelope(b []byte) (*Envelope, error) {
	if len(b) > MaxEnvelopeBytes {
		return nil, fmt.Errorf("envelope of %d bytes, over %d", len(b), MaxEnvelopeBytes)
	}
	var env Envelope
	if err := decodeStrict(b, &env); err != nil {
		return nil, fmt.Errorf("envelope: %w", err)
	}
	switch {
	case env.Signatures == nil:
		return nil, fmt.Errorf("envelope: no signatures list")
	case len(env.Signatures) > MaxSignatures:
		return nil, fmt.Errorf("envelope: %d signatures, over %d", len(env.Signatures), MaxSignatures)
	}
	for i, s := range env.Signatures {
		if len(s.PublicKey) != ed25519.PublicKeySize || len(s.Sig) != ed25519.SignatureSize {
			return nil, fmt.Errorf("envelope: signature %d: key of %d bytes, signature of %d", i, len(s.PublicKey), len(s.Sig))
		}
		if s.KeyID != KeyID(s.PublicKey) {
			return nil, fmt.Errorf("envelope: signature %d: keyid %q is not its key's (%s)", i, s.KeyID, KeyID(s.PublicKey))
		}
	}
	return &env, nil
}

// Open checks env's signatures: every one must verify against the key it
// carries, and if trusted is not nil one of them must be trusted's. It
// returns the key ids of the signatures.
func (env *Envelope) Open(trusted ed25519.PublicKey) ([]string, error) {
	msg := PAE(env.PayloadType, env.Payload)
	ids := make([]string, 0, len(env.Signatures))
	found := false
	for i, s := range env.Signatures {
		if !ed25519.Verify(s.PublicKey, msg, s.Sig) {
			return ids, fmt.Errorf("signature %d (key %s) does not verify", i, s.KeyID)
		}
		ids = append(ids, s.KeyID)
		found = found || (trusted != nil && bytes.Equal(s.PublicKey, trusted))
	}
	switch {
	case trusted == nil:
		return ids, nil
	case len(env.Signatures) == 0:
		return ids, fmt.Errorf("the bundle is not signed; key %s was expected", KeyID(trusted))
	case !found:
		return ids, fmt.Errorf("not signed by key %s (signed by %v)", KeyID(trusted), ids)
	}
	return ids, nil
}

// decodeStrict decodes JSON refusing unknown fields and trailing data.
func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// Key files. GenerateKey's keys are written as PEM: the private key as
// PKCS #8 ("PRIVATE KEY"), the public key as PKIX ("PUBLIC KEY"), what
// openssl writes for ed25519. The parsers also take raw standard base64:
// of the 32-byte public key, of the 32-byte seed or of the 64-byte
// private key (seed ‖ public key).

// GenerateKey makes an ed25519 key pair from rand (crypto/rand.Reader in
// the CLI).
func GenerateKey(rand io.Reader) (ed25519.PublicKey, ed25519.PrivateKey, error) {
	return ed25519.GenerateKey(rand)
}

// MarshalPrivateKey returns priv as a PEM PKCS #8 block.
func MarshalPrivateKey(priv ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// MarshalPublicKey returns pub as a PEM PKIX block.
func MarshalPublicKey(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// maxKeyFileBytes bounds a key file.
const maxKeyFileBytes = 4 << 10

// ParsePrivateKey reads a private key file (PEM PKCS #8, or base64 of a
// seed or a whole key).
func ParsePrivateKey(b []byte) (ed25519.PrivateKey, error) {
	if len(b) > maxKeyFileBytes {
		return nil, fmt.Errorf("%w: key file of %d bytes", ErrKey, len(b))
	}
	if blk, _ := pem.Decode(b); blk != nil {
		if blk.Type != "PRIVATE KEY" {
			return nil, fmt.Errorf("%w: PEM block %q, want PRIVATE KEY", ErrKey, blk.Type)
		}
		k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrKey, err)
		}
		priv, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("%w: %T, want ed25519", ErrKey, k)
		}
		return priv, nil
	}
	raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(b)))
	if err != nil {
		return nil, fmt.Errorf("%w: neither PEM nor base64", ErrKey)
	}
	switch len(raw) {
	case ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(raw), nil
	case ed25519.PrivateKeySize:
		priv := ed25519.NewKeyFromSeed(raw[:ed25519.SeedSize])
		if !bytes.Equal(priv, raw) {
			return nil, fmt.Errorf("%w: public half does not match the seed", ErrKey)
		}
		return priv, nil
	}
	return nil, fmt.Errorf("%w: %d bytes of base64 key, want 32 or 64", ErrKey, len(raw))
}

// ParsePublicKey reads a public key file (PEM PKIX, or base64 of the 32
// bytes).
func ParsePublicKey(b []byte) (ed25519.PublicKey, error) {
	if len(b) > maxKeyFileBytes {
		return nil, fmt.Errorf("%w: key file of %d bytes", ErrKey, len(b))
	}
	if blk, _ := pem.Decode(b); blk != nil {
		if blk.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("%w: PEM block %q, want PUBLIC KEY", ErrKey, blk.Type)
		}
		k, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrKey, err)
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("%w: %T, want ed25519", ErrKey, k)
		}
		return pub, nil
	}
	raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(b)))
	if err != nil {
		return nil, fmt.Errorf("%w: neither PEM nor base64", ErrKey)
	}
	if len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: %d bytes of base64 key, want 32", ErrKey, len(raw))
	}
	return ed25519.PublicKey(raw), nil
}

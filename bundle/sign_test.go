package bundle

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

type ed25519PublicKey = ed25519.PublicKey

func TestPAE_IsDSSEv1(t *testing.T) {
	got := string(PAE("http://example.com/HelloWorld", []byte("hello world")))
	want := "DSSEv1 29 http://example.com/HelloWorld 11 hello world"
	if got != want {
		t.Fatalf("PAE = %q, want %q", got, want)
	}
}

func TestSign_RoundTripAndWrongKey(t *testing.T) {
	chain := genChain(t, 7, 500)
	b := writeBundle(t, chain, testKey())
	pub := testKey().Public().(ed25519.PublicKey)
	rep, err := Verify(bytes.NewReader(b), VerifyConfig{PublicKey: pub})
	if err != nil || !rep.Trusted || len(rep.Signers) != 1 || rep.Signers[0] != KeyID(pub) {
		t.Fatalf("signed, right key: rep %+v, err %v", rep, err)
	}
	rep, err = Verify(bytes.NewReader(b), VerifyConfig{})
	if err != nil || rep.Trusted || len(rep.Signers) != 1 {
		t.Fatalf("signed, no key: rep %+v, err %v", rep, err)
	}
	otherPub, _, _ := ed25519.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{2}, 64)))
	_, err = Verify(bytes.NewReader(b), VerifyConfig{PublicKey: otherPub})
	var be *BreakError
	if !errors.As(err, &be) || be.Part != PartSignature || !strings.Contains(err.Error(), "not signed by key "+KeyID(otherPub)) {
		t.Fatalf("wrong key: err = %v", err)
	}
	unsigned := writeBundle(t, chain, nil)
	_, err = Verify(bytes.NewReader(unsigned), VerifyConfig{PublicKey: pub})
	if !errors.As(err, &be) || be.Part != PartSignature || !strings.Contains(err.Error(), "not signed") {
		t.Fatalf("unsigned with a key: err = %v", err)
	}
}

func TestKeys_PEMAndBase64(t *testing.T) {
	pub, priv, err := GenerateKey(bytes.NewReader(bytes.Repeat([]byte{3}, 64)))
	if err != nil {
		t.Fatal(err)
	}
	privPEM, _ := MarshalPrivateKey(priv)
	pubPEM, _ := MarshalPublicKey(pub)
	if !strings.HasPrefix(string(privPEM), "-----BEGIN PRIVATE KEY-----") || !strings.HasPrefix(string(pubPEM), "-----BEGIN PUBLIC KEY-----") {
		t.Fatalf("PEM:\n%s%s", privPEM, pubPEM)
	}
	for name, in := range map[string][]byte{
		"pem":         privPEM,
		"base64 seed": []byte(base64.StdEncoding.EncodeToString(priv.Seed()) + "\n"),
		"base64 key":  []byte(base64.StdEncoding.EncodeToString(priv)),
	} {
		got, err := ParsePrivateKey(in)
		if err != nil || !got.Equal(priv) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, in := range map[string][]byte{"pem": pubPEM, "base64": []byte(base64.StdEncoding.EncodeToString(pub))} {
		got, err := ParsePublicKey(in)
		if err != nil || !got.Equal(pub) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, in := range map[string][]byte{"public as private": pubPEM, "junk": []byte("hello"), "short": []byte("AAAA")} {
		if _, err := ParsePrivateKey(in); !errors.Is(err, ErrKey) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if _, err := ParsePublicKey(privPEM); !errors.Is(err, ErrKey) {
		t.Errorf("private as public: err = %v", err)
	}
}

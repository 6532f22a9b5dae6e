package keyring

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
)

// KeyBytes is the size of a gossip key: AES-256.
const KeyBytes = 32

// MaxKeys bounds the keys of a keyring: a rotation needs two.
const MaxKeys = 16

// maxFileBytes bounds a keyring file (at most MaxKeys keys, base64).
const maxFileBytes = 64 << 10

// DecodeKey decodes a base64 gossip key of KeyBytes bytes.
func DecodeKey(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not base64: %w", err)
	}
	if len(b) != KeyBytes {
		return nil, fmt.Errorf("%d bytes, want %d (strata keyring generate)", len(b), KeyBytes)
	}
	return b, nil
}

// ReadFile reads a keyring file: a JSON array of base64 keys, the primary
// first (as Consul's local.keyring), bounded in size and count.
func ReadFile(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("keyring file %s: over %d bytes", path, maxFileBytes)
	}
	var encoded []string
	if err := json.Unmarshal(b, &encoded); err != nil {
		return nil, fmt.Errorf("keyring file %s: %w", path, err)
	}
	if len(encoded) == 0 || len(encoded) > MaxKeys {
		return nil, fmt.Errorf("keyring file %s: %d keys, want 1..%d", path, len(encoded), MaxKeys)
	}
	keys := make([][]byte, 0, len(encoded))
	for i, e := range encoded {
		k, err := DecodeKey(e)
		if err != nil {
			return nil, fmt.Errorf("keyring file %s: key %d: %w", path, i, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// WriteFile writes keys (primary first) to path, 0600, atomically (a
// temporary file renamed into place).
func WriteFile(path string, keys [][]byte) error {
	encoded := make([]string, len(keys))
	for i, k := range keys {
		encoded[i] = base64.StdEncoding.EncodeToString(k)
	}
	b, err := json.Marshal(encoded)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("keyring file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("keyring file: %w", err)
	}
	return nil
}

package tlsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// File names of a CA directory (strata tls ca create).
const (
	CACertFile = "ca.pem"
	CAKeyFile  = "ca-key.pem"
)

// Files are where a node's TLS material lives.
type Files struct {
	CA   string // the CA bundle peers are verified against
	Cert string // this node's certificate
	Key  string // its private key
}

// CertFileNames are the certificate and key file names of name in dir:
// "<name>.pem" and "<name>-key.pem".
func CertFileNames(dir, name string) (cert, key string) {
	return filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
}

// WritePair writes p as certPath (0644) and keyPath (0600). It refuses to
// overwrite either file unless overwrite is set, so a CA's key is never
// replaced by accident.
func WritePair(certPath, keyPath string, p PEMPair, overwrite bool) error {
	if !overwrite {
		for _, f := range []string{certPath, keyPath} {
			if _, err := os.Stat(f); err == nil {
				return fmt.Errorf("tlsutil: %s exists (remove it first)", f)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("tlsutil: %w", err)
			}
		}
	}
	if err := writeFileAtomic(keyPath, p.Key, 0o600); err != nil {
		return err
	}
	return writeFileAtomic(certPath, p.Cert, 0o644)
}

// ReadPair reads a certificate and key written by WritePair.
func ReadPair(certPath, keyPath string) (PEMPair, error) {
	c, err := os.ReadFile(certPath)
	if err != nil {
		return PEMPair{}, fmt.Errorf("tlsutil: %w", err)
	}
	k, err := os.ReadFile(keyPath)
	if err != nil {
		return PEMPair{}, fmt.Errorf("tlsutil: %w", err)
	}
	return PEMPair{Cert: c, Key: k}, nil
}

// writeFileAtomic writes b to a temporary file with perm, then renames it
// over path, so a reader (a Reload) never sees half a file.
func writeFileAtomic(path string, b []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("tlsutil: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("tlsutil: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("tlsutil: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("tlsutil: sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("tlsutil: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("tlsutil: %w", err)
	}
	return nil
}

package bundle

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

// Resign writes src to dst signed by signer (strata bundle export
// --sign): src is verified as it is read (against the keys it carries)
// and its entries are written again by a Writer that checks their chain,
// with src's bundle id, creation time, creator, start and range, so the
// output differs from src only in its checkpoints' and seal's signatures
// (those of src, a gate's key or none, are replaced by signer's). dst
// holds a partial bundle when an error is returned: write it aside and
// rename it into place on success.
func Resign(dst io.Writer, src io.Reader, signer ed25519.PrivateKey) (Manifest, error) {
	if len(signer) != ed25519.PrivateKeySize {
		return Manifest{}, fmt.Errorf("%w: signer of %d bytes", ErrKey, len(signer))
	}
	// The manifest comes last: the Writer starts with a placeholder
	// creation time and gets src's fields before Close writes them.
	var w *Writer
	start := func(tenant string, head fsm.ChainHead) error {
		var err error
		w, err = NewWriter(dst, WriterConfig{Tenant: tenant, CreatedAt: time.Unix(0, 0), Start: head, Signer: signer})
		return err
	}
	rep, err := Verify(src, VerifyConfig{OnEntry: func(e *Entry) error {
		if w == nil {
			if err := start(e.Stored.Tenant, fsm.ChainHead{Seq: e.Stored.Seq - 1, Link: e.Prev}); err != nil {
				return err
			}
		}
		return w.Append(e.Stored)
	}})
	if err != nil {
		return Manifest{}, err
	}
	m := rep.Manifest
	if w == nil { // no entries: the manifest's start
		if err := start(m.Tenant, fsm.ChainHead{Seq: m.Start.Seq, Link: m.Start.Link}); err != nil {
			return Manifest{}, err
		}
	}
	created, err := m.Created()
	if err != nil {
		return Manifest{}, fmt.Errorf("bundle: resign: created_at: %w", err)
	}
	w.cfg.BundleID, w.cfg.CreatedAt, w.cfg.CreatedBy, w.cfg.Range = m.BundleID, created, m.CreatedBy, m.Range
	if err := w.cfg.Validate(); err != nil {
		return Manifest{}, err
	}
	out, err := w.Close()
	if err == nil && (out.EntriesSHA256 != m.EntriesSHA256 || out.ChainHead != m.ChainHead) {
		err = errors.New("bundle: resign: the entries written differ from the bundle's") // a Writer bug, never the input's
	}
	return out, err
}

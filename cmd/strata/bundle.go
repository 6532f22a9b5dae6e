package main

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/bundle"
)

// The bundle commands work on files only: no cluster, no network
// (bundle/FORMAT.md). Export and import over the API are separate.

func newBundleCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle",
		Short: "Audit bundles: export from and import into a cluster; verify, merge, convert to NDJSON and make signing keys offline",
	}
	cmd.AddCommand(newBundleKeygenCmd(), newBundleVerifyCmd(), newBundleMergeCmd(), newBundleNDJSONCmd(),
		newBundleExportCmd(), newBundleImportCmd())
	return cmd
}

func newBundleKeygenCmd() *cobra.Command {
	var prefix string
	cmd := &cobra.Command{
		Use:   "keygen -o PREFIX",
		Short: "Write an ed25519 key pair: PREFIX.key (PEM PKCS #8, mode 0600) and PREFIX.pub (PEM PKIX)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if prefix == "" {
				return usageError{errors.New("keygen: -o PREFIX is required")}
			}
			pub, priv, err := bundle.GenerateKey(rand.Reader)
			if err != nil {
				return err
			}
			privPEM, err := bundle.MarshalPrivateKey(priv)
			if err != nil {
				return err
			}
			pubPEM, err := bundle.MarshalPublicKey(pub)
			if err != nil {
				return err
			}
			if err := writeNewFile(prefix+".key", privPEM, 0o600); err != nil {
				return fmt.Errorf("keygen: %w", err)
			}
			if err := writeNewFile(prefix+".pub", pubPEM, 0o644); err != nil {
				os.Remove(prefix + ".key")
				return fmt.Errorf("keygen: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s.key (private: keep it secret) and %s.pub, key id %s\n", prefix, prefix, bundle.KeyID(pub))
			return nil
		},
	}
	cmd.Flags().StringVarP(&prefix, "output", "o", "", "path prefix of the key files")
	return cmd
}

// writeNewFile creates path with mode perm, refusing to overwrite.
func writeNewFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

func readPublicKey(path string) (ed25519.PublicKey, error) {
	if path == "" {
		return nil, nil
	}
	b, err := readSmallFile(path)
	if err != nil {
		return nil, err
	}
	pub, err := bundle.ParsePublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pub, nil
}

func readPrivateKey(path string) (ed25519.PrivateKey, error) {
	if path == "" {
		return nil, nil
	}
	b, err := readSmallFile(path)
	if err != nil {
		return nil, err
	}
	priv, err := bundle.ParsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return priv, nil
}

// readSmallFile reads a key file, refusing one of over 64 KiB.
func readSmallFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10+1))
	if err == nil && len(b) > 64<<10 {
		err = fmt.Errorf("%s: over 64 KiB, not a key file", path)
	}
	return b, err
}

// verifyResult is `bundle verify -o json`'s output.
type verifyResult struct {
	OK       bool     `json:"ok"`
	File     string   `json:"file"`
	Format   string   `json:"format"` // bundle or ndjson
	Manifest any      `json:"manifest,omitempty"`
	Entries  uint64   `json:"entries"`
	Signers  []string `json:"signers,omitempty"`
	Trusted  bool     `json:"trusted"`
	// Version is the bundle's format version; Start, when set, where a
	// bundle that starts mid-chain starts (its first previous link,
	// taken as given); Checkpoints and CheckpointsSigned how many
	// checkpoints verified.
	Version           int                `json:"version,omitempty"`
	Start             *startPoint        `json:"start,omitempty"`
	Checkpoints       uint64             `json:"checkpoints"`
	CheckpointsSigned uint64             `json:"checkpoints_signed"`
	Error             *verifyResultError `json:"error,omitempty"`
}

// startPoint is where a mid-chain bundle starts.
type startPoint struct {
	Seq  uint64 `json:"seq"`
	Link string `json:"link"`
}

type verifyResultError struct {
	Part    string `json:"part,omitempty"`
	Index   *int   `json:"index,omitempty"`
	Seq     uint64 `json:"seq,omitempty"`
	EventID string `json:"event_id,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func newBundleVerifyCmd() *cobra.Command {
	var pubkey, output string
	cmd := &cobra.Command{
		Use:   "verify FILE",
		Short: "Check a bundle (or its NDJSON): manifest digest, every link, prev links, chain head, signature; exit 1 naming the first broken entry",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != outputTable && output != outputJSON {
				return usageError{fmt.Errorf("-o %q: want %s or %s", output, outputTable, outputJSON)}
			}
			pub, err := readPublicKey(pubkey)
			if err != nil {
				return usageError{fmt.Errorf("--pubkey: %w", err)}
			}
			res, err := verifyFile(args[0], pub)
			if res == nil {
				return fmt.Errorf("verify %s: %w", args[0], err)
			}
			if err != nil {
				res.Error = &verifyResultError{Message: err.Error()}
				var be *bundle.BreakError
				if errors.As(err, &be) {
					res.Error.Part, res.Error.Seq, res.Error.Field = be.Part, be.Seq, be.Field
					if be.Index >= 0 {
						res.Error.Index = &be.Index
					}
					if !be.EventID.IsZero() {
						res.Error.EventID = be.EventID.String()
					}
				}
			}
			res.OK = err == nil
			if perr := printVerify(cmd.OutOrStdout(), res, output); perr != nil {
				return perr
			}
			if err != nil {
				return fmt.Errorf("verify %s: %w", args[0], err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&pubkey, "pubkey", "", "public key file (PEM or base64) that must have signed the bundle")
	cmd.Flags().StringVarP(&output, "output", "o", outputTable, "output format: table or json")
	return cmd
}

// verifyFile verifies a bundle or, if the file starts with '{', NDJSON.
// A nil result is an error before verifying (the file does not open).
func verifyFile(path string, pub ed25519.PublicKey) (*verifyResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	head, _ := r.Peek(1)
	res := &verifyResult{File: path, Format: "bundle"}
	if bytes.Equal(head, []byte("{")) {
		res.Format = "ndjson"
		if pub != nil {
			return nil, usageError{errors.New("--pubkey: NDJSON is not signed; verify the bundle it came from")}
		}
		rep, err := bundle.VerifyNDJSON(r)
		res.Entries = rep.Lines
		if rep.Manifest.Format != "" {
			res.Manifest = rep.Manifest
		}
		return res, err
	}
	rep, err := bundle.Verify(r, bundle.VerifyConfig{PublicKey: pub})
	res.Entries, res.Signers, res.Trusted = rep.Entries, rep.Signers, rep.Trusted
	res.Version, res.Checkpoints, res.CheckpointsSigned = rep.Version, rep.Checkpoints, rep.CheckpointsSigned
	if rep.Start.Seq > 0 {
		res.Start = &startPoint{Seq: rep.Start.Seq, Link: rep.Start.Link.String()}
	}
	if rep.Manifest.Format != "" {
		res.Manifest = rep.Manifest
	}
	return res, err
}

func printVerify(w io.Writer, res *verifyResult, output string) error {
	if output == outputJSON {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	if !res.OK {
		fmt.Fprintf(w, "FAILED: %s (%s) after %d good entries\n", res.File, res.Format, res.Entries)
		return nil
	}
	t := newTable(w)
	t.row("ok", res.File+" ("+res.Format+")")
	switch m := res.Manifest.(type) {
	case bundle.Manifest:
		t.row("tenant", orDash(m.Tenant))
		t.row("bundle id", m.BundleID)
		t.row("format version", m.Version)
		t.row("entries", m.Count)
		t.row("start", startText(res))
		t.row("chain head", fmt.Sprintf("seq %d link %s", m.ChainHead.Seq, m.ChainHead.Link))
		t.row("hlc", fmt.Sprintf("%s .. %s", m.FirstHLC, m.LastHLC))
		if m.Range != nil {
			t.row("exported range", fmt.Sprintf("%s .. %s (inclusive)", m.Range.From, m.Range.To))
		}
		t.row("created", fmt.Sprintf("%s by %s", m.CreatedAt, orDash(m.CreatedBy)))
		t.row("entries sha256", m.EntriesSHA256)
		t.row("checkpoints", checkpointsText(res))
		t.row("signature", signatureText(res))
	case bundle.NDJSONManifest:
		t.row("tenant", orDash(m.Tenant))
		t.row("bundle id", m.BundleID)
		t.row("lines", m.Count)
		if m.Start.Seq > 0 {
			t.row("start", fmt.Sprintf("mid-chain, after seq %d (link %s): taken as given", m.Start.Seq, m.Start.Link))
		}
		if m.Range != nil {
			t.row("range", fmt.Sprintf("%s .. %s (inclusive): only the events in it, seqs may have gaps", m.Range.From, m.Range.To))
		}
		t.row("chain head", fmt.Sprintf("seq %d link %s", m.ChainHead.Seq, m.ChainHead.Link))
		t.row("hlc", fmt.Sprintf("%s .. %s", m.FirstHLC, m.LastHLC))
		t.row("sha256", m.SHA256)
		t.row("signature", "none (NDJSON is not signed)")
	}
	return t.flush()
}

func startText(res *verifyResult) string {
	if res.Start == nil {
		return "genesis"
	}
	return fmt.Sprintf("mid-chain, after seq %d (link %s): the first previous link is taken as given", res.Start.Seq, res.Start.Link)
}

func checkpointsText(res *verifyResult) string {
	switch {
	case res.Version < 2:
		return "none (a version 1 bundle has none)"
	case res.Checkpoints == 0:
		return "none (no complete batch of 1000 entries)"
	case res.CheckpointsSigned == 0:
		return fmt.Sprintf("%d verified (roots, links, counts), unsigned", res.Checkpoints)
	case res.Trusted:
		return fmt.Sprintf("%d verified (roots, links, counts), %d signed by the trusted key", res.Checkpoints, res.CheckpointsSigned)
	}
	return fmt.Sprintf("%d verified (roots, links, counts), %d signed by the key the bundle carries", res.Checkpoints, res.CheckpointsSigned)
}

func signatureText(res *verifyResult) string {
	switch {
	case len(res.Signers) == 0:
		return "unsigned"
	case res.Trusted:
		return fmt.Sprintf("signed by %v, trusted key given", res.Signers)
	}
	return fmt.Sprintf("signed by %v, valid for the key it carries; not checked against a trusted key (--pubkey)", res.Signers)
}

// openSources opens the bundle files of a merge or conversion.
func openSources(paths []string) ([]bundle.Source, func(), error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	srcs := make([]bundle.Source, 0, len(paths))
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		files = append(files, f)
		st, err := f.Stat()
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		srcs = append(srcs, bundle.Source{Name: p, R: f, Size: st.Size()})
	}
	return srcs, closeAll, nil
}

// writeAtomically writes OUT through a temporary file in its directory,
// renamed over OUT only when write succeeded.
func writeAtomically(out string, write func(w io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}

func newBundleMergeCmd() *cobra.Command {
	var out, sign, pubkey, createdBy, tempDir string
	var runEntries int
	cmd := &cobra.Command{
		Use:   "merge A B ... -o OUT",
		Short: "Merge bundles of one tenant by HLC total order into one (duplicates dropped, a body conflict refused); the output depends only on the set of inputs",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError{errors.New("merge: -o OUT is required")}
			}
			signer, err := readPrivateKey(sign)
			if err != nil {
				return usageError{fmt.Errorf("--sign: %w", err)}
			}
			pub, err := readPublicKey(pubkey)
			if err != nil {
				return usageError{fmt.Errorf("--pubkey: %w", err)}
			}
			srcs, closeAll, err := openSources(args)
			if err != nil {
				return fmt.Errorf("merge: %w", err)
			}
			defer closeAll()
			var res bundle.MergeResult
			err = writeAtomically(out, func(w io.Writer) error {
				var err error
				res, err = bundle.Merge(w, srcs, bundle.MergeConfig{CreatedBy: createdBy, Signer: signer, PublicKey: pub,
					RunEntries: runEntries, NewRunFile: tempRunFiles(tempDir)})
				return err
			})
			if err != nil {
				return fmt.Errorf("merge: %w", err)
			}
			m := res.Manifest
			fmt.Fprintf(cmd.OutOrStdout(), "merged %d bundles of tenant %q: %d entries read, %d duplicates dropped, %d written to %s (head seq %d link %s); the inputs' checkpoints dropped, %d recomputed over the merged chain%s\n",
				res.Inputs, m.Tenant, res.Read, res.Duplicates, m.Count, out, m.ChainHead.Seq, m.ChainHead.Link, m.Checkpoints, runsText(res.Runs))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write the merged bundle to")
	cmd.Flags().StringVar(&sign, "sign", "", "private key file (PEM or base64) to sign the merged bundle with")
	cmd.Flags().StringVar(&pubkey, "pubkey", "", "public key file that must have signed every input")
	cmd.Flags().StringVar(&createdBy, "created-by", "", "the merged manifest's created_by (default "+bundle.DefaultMergeCreatedBy+")")
	cmd.Flags().IntVar(&runEntries, "run-entries", bundle.DefaultMergeRunEntries,
		"entries sorted in memory (112 bytes each); past it the merge sorts runs in temporary files (same output)")
	cmd.Flags().StringVar(&tempDir, "temp-dir", "", "directory of an external merge's temporary files (default: the system's)")
	return cmd
}

// runFile is a merge's run file, removed when closed.
type runFile struct{ *os.File }

func (f runFile) Close() error {
	err := f.File.Close()
	if rerr := os.Remove(f.Name()); err == nil {
		err = rerr
	}
	return err
}

// tempRunFiles makes an external merge's run files in dir.
func tempRunFiles(dir string) func() (bundle.RunFile, error) {
	return func() (bundle.RunFile, error) {
		f, err := os.CreateTemp(dir, "strata-merge-*.run")
		if err != nil {
			return nil, err
		}
		return runFile{f}, nil
	}
}

func newBundleNDJSONCmd() *cobra.Command {
	var out, pubkey, tempDir string
	cmd := &cobra.Command{
		Use:   "ndjson FILE -o OUT",
		Short: "Verify a bundle and write its events as NDJSON sorted by HLC, with a last manifest line (-o - for stdout)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError{errors.New("ndjson: -o OUT is required")}
			}
			pub, err := readPublicKey(pubkey)
			if err != nil {
				return usageError{fmt.Errorf("--pubkey: %w", err)}
			}
			srcs, closeAll, err := openSources(args)
			if err != nil {
				return fmt.Errorf("ndjson: %w", err)
			}
			defer closeAll()
			write := func(w io.Writer) error {
				_, err := bundle.WriteNDJSONWith(w, srcs[0], bundle.NDJSONConfig{PublicKey: pub, NewRunFile: tempRunFiles(tempDir)})
				return err
			}
			if out == "-" {
				err = write(cmd.OutOrStdout())
			} else {
				err = writeAtomically(out, write)
			}
			if err != nil {
				return fmt.Errorf("ndjson: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write the NDJSON to, - for stdout")
	cmd.Flags().StringVar(&pubkey, "pubkey", "", "public key file that must have signed the bundle")
	cmd.Flags().StringVar(&tempDir, "temp-dir", "", "directory of the sorted runs of lines past 16 MiB (default: the system's)")
	return cmd
}

func runsText(runs int) string {
	if runs == 0 {
		return ""
	}
	return fmt.Sprintf("; sorted on disk in %d runs", runs)
}

package main

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/bundle"
	"github.com/strata-ledger/strata/transport/api"
)

// The bundle commands that talk to a cluster: export and import. They
// take --addr and --token as the client commands do, but -o is the
// output file (export), so they register those two flags themselves.

// addTargetFlags registers --addr and --token on cmd.
func addTargetFlags(cmd *cobra.Command) *clientFlags {
	f := &clientFlags{output: outputTable}
	fs := cmd.Flags()
	fs.StringSliceVar(&f.addrs, "addr", nil, "API address of a gate, host:port (env "+envAddr+"; default: the nodes of ./"+devClusterFile+")")
	fs.StringVar(&f.token, "token", "", "bearer token (env "+envToken+"; default: the token of ./"+devClusterFile+")")
	f.addTLSFlags(fs)
	return f
}

func newBundleExportCmd() *cobra.Command {
	var tenant, out, format, fromHLC, toHLC, sign string
	cmd := &cobra.Command{
		Use:   "export --tenant T -o FILE [--format bundle|ndjson] [--from-hlc A] [--to-hlc B]",
		Short: "Write a tenant's audit chain from the cluster to FILE (GET /v1/export)",
		Long: `Write a tenant's audit chain as the cluster's gates hold it to FILE: a bundle
(every event with its seq, links and body, then a manifest) or NDJSON sorted
by HLC. The file is written beside FILE and renamed into place once the
export is complete, so FILE is never a partial export. Verify it offline
with strata bundle verify.

--from-hlc and --to-hlc (inclusive, HLC total order; wall:logical:node or a
wall clock in ms; either may be left out) export a range: the bundle is the
contiguous sub-chain from the first to the last entry whose HLC is in it
(it may start mid-chain: verify takes its first previous link as given and
says so), the NDJSON only the events in it.

--sign KEYFILE signs the bundle here with that private key: the export is
verified as it arrives and written again with the same entries, bundle id,
creation time and range, its checkpoints and manifest signed by KEYFILE
(the key of the gates, if any, is replaced). Not with --format ndjson,
which is never signed.`,
		Example: `  strata bundle export --tenant acme -o acme.bundle
  strata bundle export --tenant acme -o day.bundle --from-hlc 1700000000000 --to-hlc 1700086399999
  strata bundle export --tenant acme -o day.ndjson --format ndjson --from-hlc 1700000000000:0:0`,
		Args: cobra.NoArgs,
	}
	f := addTargetFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if tenant == "" || out == "" {
			return usageError{errors.New("export: --tenant and -o FILE are required")}
		}
		if format != "bundle" && format != "ndjson" {
			return usageError{fmt.Errorf("export: --format %q: want bundle or ndjson", format)}
		}
		if _, err := bundle.ParseRange(fromHLC, toHLC); err != nil {
			return usageError{fmt.Errorf("export: --from-hlc/--to-hlc: %w", err)}
		}
		signer, err := readPrivateKey(sign)
		switch {
		case err != nil:
			return usageError{fmt.Errorf("--sign: %w", err)}
		case signer != nil && format != "bundle":
			return usageError{errors.New("export: --sign signs bundles; NDJSON is never signed")}
		}
		c, err := f.client()
		if err != nil {
			return err
		}
		var n int64
		if err := writeAtomically(out, func(w io.Writer) error {
			var err error
			if signer == nil {
				n, err = c.ExportRange(cmd.Context(), tenant, format, fromHLC, toHLC, w)
				return err
			}
			n, err = exportSigned(cmd.Context(), c, tenant, fromHLC, toHLC, signer, w)
			return err
		}); err != nil {
			return fmt.Errorf("export %s: %w", tenant, err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d bytes)\n", out, n)
		return nil
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant whose chain to export (required)")
	cmd.Flags().StringVarP(&out, "out", "o", "", "the file to write (required)")
	cmd.Flags().StringVar(&format, "format", "bundle", "bundle or ndjson")
	cmd.Flags().StringVar(&fromHLC, "from-hlc", "", "export from this HLC on (inclusive): wall:logical:node or wall ms")
	cmd.Flags().StringVar(&toHLC, "to-hlc", "", "export up to this HLC (inclusive): wall:logical:node or wall ms")
	cmd.Flags().StringVar(&sign, "sign", "", "private key file (PEM or base64) to sign the bundle with")
	return cmd
}

// exportSigned downloads the export into a temporary file, then writes
// it to w re-signed by signer (bundle.Resign), returning the bytes
// written.
func exportSigned(ctx context.Context, c *api.Client, tenant, fromHLC, toHLC string, signer ed25519.PrivateKey, w io.Writer) (int64, error) {
	tmp, err := os.CreateTemp("", "strata-export-*.bundle")
	if err != nil {
		return 0, err
	}
	defer func() { tmp.Close(); os.Remove(tmp.Name()) }()
	size, err := c.ExportRange(ctx, tenant, "bundle", fromHLC, toHLC, tmp)
	if err != nil {
		return 0, err
	}
	cw := &countingWriter{w: w}
	if _, err := bundle.Resign(cw, io.NewSectionReader(tmp, 0, size), signer); err != nil {
		return cw.n, fmt.Errorf("sign: %w", err)
	}
	return cw.n, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func newBundleImportCmd() *cobra.Command {
	var verifyOnly, force bool
	var pubkey string
	cmd := &cobra.Command{
		Use:   "import FILE... [--force] [--verify-only]",
		Short: "Verify bundles and apply their events to the cluster (POST /v1/import, operator token)",
		Long: `Send each bundle to a gate, which verifies it and applies its events through
the ledger's normal idempotent apply, in HLC order: events it holds already
are counted as duplicates; an event it holds with another body refuses the
whole bundle (nothing of it is applied). --force skips manifest and
signature failures only, never a broken entry or a body conflict.
--pubkey FILE makes the gate require a valid signature by that key (an
unsigned bundle, or one signed by others only, is refused with 403);
without it a signature is checked only against the key the bundle carries,
which anyone can re-sign with. --pubkey and --force exclude each other.
Exits 1 at the first bundle that is refused.`,
		Args: cobra.MinimumNArgs(1),
	}
	f := addTargetFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if force && pubkey != "" {
			return usageError{errors.New("import: --force and --pubkey exclude each other")}
		}
		pub, err := readPublicKey(pubkey)
		if err != nil {
			return usageError{fmt.Errorf("--pubkey: %w", err)}
		}
		o := api.ImportOptions{VerifyOnly: verifyOnly, Force: force}
		if pub != nil {
			o.PublicKey = base64.StdEncoding.EncodeToString(pub)
		}
		c, err := f.client()
		if err != nil {
			return err
		}
		t := newTable(cmd.OutOrStdout(), "FILE", "TENANT", "ENTRIES", "VERIFIED", "APPLIED", "DUPLICATES", "ABSORBED", "REJECTED")
		for _, path := range args {
			file, err := os.Open(path)
			if err != nil {
				return err
			}
			res, err := c.ImportWith(cmd.Context(), file, o)
			file.Close()
			if err != nil {
				_ = t.flush()
				return fmt.Errorf("%s: %w", path, err)
			}
			t.row(path, res.Tenant, fmt.Sprint(res.Entries), fmt.Sprint(res.Verified), fmt.Sprint(res.Applied),
				fmt.Sprint(res.Duplicates), fmt.Sprint(res.Absorbed), fmt.Sprint(res.Rejected))
		}
		return t.flush()
	}
	cmd.Flags().BoolVar(&verifyOnly, "verify-only", false, "verify on the cluster without applying")
	cmd.Flags().BoolVar(&force, "force", false, "skip manifest and signature failures (never body conflicts)")
	cmd.Flags().StringVar(&pubkey, "pubkey", "", "public key file (PEM or base64) that must have signed every bundle")
	return cmd
}

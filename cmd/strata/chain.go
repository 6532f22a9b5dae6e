package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/strata-ledger/strata/bundle"
	"github.com/strata-ledger/strata/transport/api"
)

func newChainCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chain",
		Short: "Check a tenant's audit chain",
	}
	f := addClientFlags(cmd)
	cmd.AddCommand(newChainVerifyCmd(f), newChainProofCmd(f))
	return cmd
}

func newChainVerifyCmd(f *clientFlags) *cobra.Command {
	var tenant string
	cmd := &cobra.Command{
		Use:   "verify --tenant T",
		Short: "Recompute every link of a tenant's audit chain, page by page, up to its head",
		Long: `Recompute every link of the tenant's audit chain on a gate, page by page (at
most the server's limit of events each), up to the stored head. Exits 0 when
every link verifies, 1 when one does not (the answer names the first broken
sequence number) or the chain cannot be read.`,
		Example: `  strata chain verify --tenant acme
  strata chain verify --tenant acme -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tenant == "" {
				return usageError{errors.New("--tenant is required")}
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			v, _, err := c.VerifyChain(cmd.Context(), tenant, f.readOptions())
			if err != nil {
				return err
			}
			if f.json() {
				b, err := json.Marshal(v)
				if err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), b)
			}
			t := newTable(cmd.OutOrStdout())
			t.row("tenant", v.Tenant)
			t.row("verified", strconv.FormatBool(v.Verified))
			t.row("events", strconv.Itoa(v.Events))
			t.row("head_seq", strconv.FormatUint(v.Seq, 10))
			t.row("head_link", orDash(v.Link))
			return t.flush()
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant whose chain to verify (required)")
	return cmd
}

func newChainProofCmd(f *clientFlags) *cobra.Command {
	var tenant, event, pubkey, file string
	var seq uint64
	cmd := &cobra.Command{
		Use:   "proof (--tenant T (--seq S | --event ID) | --file PROOF) [--pubkey FILE]",
		Short: "Fetch and check the inclusion proof of one entry in its batch's checkpoint",
		Long: `Fetch the inclusion proof of one entry of the tenant's chain, by sequence number
or event id (GET /v1/chain/proof), and check it here: the event's content and
previous link give its link, which hashed up the batch's Merkle tree gives the
checkpoint's root. --pubkey FILE also requires the checkpoint to be signed by
that key (the gates' signing_key): without it the proof shows the entry is in
the batch the checkpoint names, not who made the checkpoint. --file checks a
proof saved with -o json instead, offline: no cluster, no network call.
Exits 1 if the proof does not verify.`,
		Example: `  strata chain proof --tenant acme --seq 1200 --pubkey gates.pub
  strata chain proof --tenant acme --event 0191e5c6a1f07c3e8e0d5b3a1f2c4d6e -o json > proof.json
  strata chain proof --file proof.json --pubkey gates.pub`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			remote := tenant != "" && (seq == 0) != (event == "")
			if remote == (file != "") {
				return usageError{errors.New("give --tenant with one of --seq and --event, or --file")}
			}
			pub, err := readPublicKey(pubkey)
			if err != nil {
				return usageError{fmt.Errorf("--pubkey: %w", err)}
			}
			var p *bundle.Proof
			var raw []byte
			if file != "" {
				if raw, err = readProofFile(file); err != nil {
					return err
				}
				dp, err := bundle.DecodeProof(raw)
				if err != nil {
					return fmt.Errorf("%s: %w", file, err)
				}
				p = &dp
			} else {
				c, err := f.client()
				if err != nil {
					return err
				}
				var meta api.ResponseMeta
				if event != "" {
					p, meta, err = c.ChainProofOfEvent(cmd.Context(), tenant, event, f.readOptions())
				} else {
					p, meta, err = c.ChainProof(cmd.Context(), tenant, seq, f.readOptions())
				}
				if err != nil {
					return err
				}
				raw = meta.Body
			}
			signed := "not checked (no --pubkey)"
			if pub != nil {
				if err := bundle.VerifyProofSigned(*p, pub); err != nil {
					return err
				}
				signed = "by key " + bundle.KeyID(pub)
			} else if err := bundle.VerifyProof(*p); err != nil {
				return err
			}
			if f.json() {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			t := newTable(cmd.OutOrStdout())
			t.row("seq", strconv.FormatUint(p.Seq, 10))
			if p.Event != nil {
				t.row("event", p.Event.ID.String())
				t.row("job", orDash(p.Event.JobID))
				t.row("type", p.Event.Type.String())
				t.row("hlc", p.Event.HLC.String())
			}
			t.row("link", p.Link.String())
			t.row("batch", fmt.Sprintf("%d..%d", p.Batch.FirstSeq, p.Batch.LastSeq))
			t.row("root", p.Batch.Root.String())
			what := "verified (path only: the proof carries no event)"
			if p.Event != nil {
				what = "verified (link recomputed from the event"
				what += fmt.Sprintf(", %d hashes to the root)", len(p.Path))
			}
			t.row("proof", what)
			t.row("checkpoint signed", signed)
			return t.flush()
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant")
	cmd.Flags().Uint64Var(&seq, "seq", 0, "the entry's sequence number")
	cmd.Flags().StringVar(&event, "event", "", "the entry's event id")
	cmd.Flags().StringVar(&pubkey, "pubkey", "", "public key file (PEM or base64) that must have signed the checkpoint")
	cmd.Flags().StringVar(&file, "file", "", "check this saved proof (-o json) offline instead of fetching one")
	return cmd
}

// readProofFile reads a saved proof, at most bundle.MaxProofBytes.
func readProofFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, bundle.MaxProofBytes+1))
	if err == nil && len(b) > bundle.MaxProofBytes {
		err = fmt.Errorf("%s: over %d bytes, not a proof", path, bundle.MaxProofBytes)
	}
	return b, err
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/strata-ledger/strata/bundle"
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
	var tenant string
	var seq uint64
	cmd := &cobra.Command{
		Use:   "proof --tenant T --seq S",
		Short: "Fetch and check the inclusion proof of one entry in its batch's checkpoint",
		Long: `Fetch the inclusion proof of entry S of the tenant's chain (GET /v1/chain/proof)
and check it here against the checkpoint it names: the entry's link hashed up
the batch's Merkle tree gives the checkpoint's root. Exits 1 if it does not.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tenant == "" || seq == 0 {
				return usageError{errors.New("--tenant and --seq are required")}
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			p, meta, err := c.ChainProof(cmd.Context(), tenant, seq, f.readOptions())
			if err != nil {
				return err
			}
			if err := bundle.VerifyProof(*p); err != nil {
				return err
			}
			if f.json() {
				return printJSON(cmd.OutOrStdout(), meta.Body)
			}
			t := newTable(cmd.OutOrStdout())
			t.row("seq", strconv.FormatUint(p.Seq, 10))
			t.row("link", p.Link.String())
			t.row("batch", fmt.Sprintf("%d..%d", p.Batch.FirstSeq, p.Batch.LastSeq))
			t.row("root", p.Batch.Root.String())
			t.row("proof", fmt.Sprintf("verified (%d hashes)", len(p.Path)))
			return t.flush()
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant (required)")
	cmd.Flags().Uint64Var(&seq, "seq", 0, "the entry's sequence number (required)")
	return cmd
}

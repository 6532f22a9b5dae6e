package main

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/spf13/cobra"
)

func newChainCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chain",
		Short: "Check a tenant's audit chain",
	}
	f := addClientFlags(cmd)
	cmd.AddCommand(newChainVerifyCmd(f))
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

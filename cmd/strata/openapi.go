package main

import (
	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/transport/api"
)

// newOpenAPICmd prints the OpenAPI 3.1 document of the HTTP API, the one
// every node serves at /v1/openapi.json.
func newOpenAPICmd() *cobra.Command {
	return &cobra.Command{
		Use:   "openapi",
		Short: "Print the OpenAPI 3.1 document of the HTTP API (JSON)",
		Long: "Print the OpenAPI 3.1 document of the HTTP API v1, as built into this binary: the same\n" +
			"document every node serves without a token at GET /v1/openapi.json and GET /.well-known/openapi.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(api.OpenAPI())
			return err
		},
	}
}

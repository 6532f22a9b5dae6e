package main

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/transport/tlsutil"
)

// newTLSCmd is `strata tls ca create` and `strata tls cert create`: the
// files a TLS deployment needs, as `consul tls` writes them.
func newTLSCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tls",
		Short: "Create a cluster CA and node or client certificates",
	}
	ca := &cobra.Command{Use: "ca", Short: "The cluster's certificate authority"}
	ca.AddCommand(newTLSCACreateCmd())
	cert := &cobra.Command{Use: "cert", Short: "Certificates signed by the cluster CA"}
	cert.AddCommand(newTLSCertCreateCmd())
	cmd.AddCommand(ca, cert)
	return cmd
}

func newTLSCACreateCmd() *cobra.Command {
	var dir, name string
	cmd := &cobra.Command{
		Use:   "create [-o DIR]",
		Short: "Write a new CA (ECDSA P-256, 10 years): DIR/ca.pem and DIR/ca-key.pem (0600)",
		Long: `Write a new cluster CA into DIR (default: the current directory):
ca.pem, given to every node (tls.ca_file) and client, and ca-key.pem
(mode 0600), which signs certificates and should stay offline. Existing
files are never overwritten.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			p, err := tlsutil.NewCA(rand.Reader, time.Now(), name)
			if err != nil {
				return err
			}
			cert, key := filepath.Join(dir, tlsutil.CACertFile), filepath.Join(dir, tlsutil.CAKeyFile)
			if err := tlsutil.WritePair(cert, key, p, false); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "==> CA certificate %s\n==> CA key %s (keep it offline)\n", cert, key)
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "out", "o", ".", "directory to write ca.pem and ca-key.pem into")
	cmd.Flags().StringVar(&name, "name", "", "the CA's common name (default \"Strata cluster CA\")")
	return cmd
}

func newTLSCertCreateCmd() *cobra.Command {
	var (
		req    tlsutil.CertRequest
		caDir  string
		outDir string
		days   int
	)
	cmd := &cobra.Command{
		Use:   "create --role gate|manager|client [--region R --node ID] [--host H ...] [--ca DIR] [-o DIR]",
		Short: "Write a certificate signed by the CA: DIR/<node>.pem and DIR/<node>-key.pem (0600)",
		Long: `Write a certificate and key signed by the CA in --ca (ca.pem, ca-key.pem).

A gate or manager certificate (--role gate|manager, --region and --node
required) is valid for server and client use, for the hosts given with
--host (IPs or DNS names, repeatable) and always for localhost and
127.0.0.1; its common name is <node>.<role>.<region>.strata. A client
certificate (--role client) is for an operator's CLI: client use only.

Files: <node>.pem and <node>-key.pem (client: <node or "cli">-client.pem)
in --out. Existing files are never overwritten.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if days < 1 {
				return usageError{fmt.Errorf("--days %d: want at least 1", days)}
			}
			req.Validity = time.Duration(days) * 24 * time.Hour
			if err := req.Validate(); err != nil {
				return usageError{err}
			}
			ca, err := tlsutil.ReadPair(filepath.Join(caDir, tlsutil.CACertFile), filepath.Join(caDir, tlsutil.CAKeyFile))
			if err != nil {
				return fmt.Errorf("--ca %s: %w", caDir, err)
			}
			p, err := tlsutil.NewCert(rand.Reader, time.Now(), ca, req)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(outDir, 0o755); err != nil {
				return err
			}
			cert, key := tlsutil.CertFileNames(outDir, certBaseName(req))
			if err := tlsutil.WritePair(cert, key, p, false); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "==> certificate %s (%s)\n==> key %s\n", cert, req.CommonName(), key)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&req.Role, "role", "", "gate, manager or client")
	fs.StringVar(&req.Region, "region", "", "the node's region (gate, manager)")
	fs.StringVar(&req.Node, "node", "", "the node id (gate, manager; optional for a client)")
	fs.StringSliceVar(&req.Hosts, "host", nil, "IP or DNS name the node is reached at (repeatable)")
	fs.StringVar(&caDir, "ca", ".", "directory holding ca.pem and ca-key.pem")
	fs.StringVarP(&outDir, "out", "o", ".", "directory to write the certificate and key into")
	fs.IntVar(&days, "days", int(tlsutil.DefaultCertValidity/(24*time.Hour)), "validity in days (never past the CA's)")
	return cmd
}

// certBaseName names a certificate's files: the node id, or for a client
// "<node or cli>-client".
func certBaseName(req tlsutil.CertRequest) string {
	if req.Role != tlsutil.RoleClient {
		return req.Node
	}
	if req.Node == "" {
		return "cli-client"
	}
	return req.Node + "-client"
}

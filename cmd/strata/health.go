package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/transport/api"
)

// defaultHealthAddr is probed when neither --url nor STRATA_HTTP_ADDR says
// where the node listens.
const defaultHealthAddr = "127.0.0.1:7100"

// newHealthCmd is the container health check: a FROM-scratch image has no
// curl, so the binary probes its own node.
func newHealthCmd() *cobra.Command {
	var url, path, caFile string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Probe a node's /livez (or --path) and exit 0 if it answers 2xx, else 1",
		Long: `health GETs a node's health endpoint and exits 0 on a 2xx answer, 1
otherwise: the health check of the container image, which has no curl.
Without --url it probes http://$STRATA_HTTP_ADDR (the agent's own address;
an unspecified host such as 0.0.0.0 means this host), else
http://` + defaultHealthAddr + `.

A TLS node: with --ca-file, else ` + envCAFile + `, else the agent's own
` + envHealthTLSCA + `, the probe is https and trusts that CA only.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ca := healthCA(caFile)
			if url == "" {
				scheme := "http"
				if ca != "" {
					scheme = "https"
				}
				url = scheme + "://" + healthHost(os.Getenv(envPrefix+"HTTP_ADDR")) + path
			}
			hc := &http.Client{}
			if ca != "" {
				tc, err := api.ClientTLS(ca, "", "")
				if err != nil {
					return usageError{fmt.Errorf("health: %w", err)}
				}
				hc.Transport = &http.Transport{TLSClientConfig: tc}
			}
			status, err := probeHealth(cmd.Context(), hc, url, timeout)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", url, status)
			return err
		},
	}
	cmd.Flags().StringVar(&url, "url", "", "URL to probe (default: http://$STRATA_HTTP_ADDR + --path)")
	cmd.Flags().StringVar(&path, "path", "/livez", "endpoint probed when --url is not given (/livez or /readyz)")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "give up after this long")
	cmd.Flags().StringVar(&caFile, "ca-file", "", "CA of a TLS node: probe https (default: $"+envCAFile+", then $"+envHealthTLSCA+")")
	return cmd
}

// envHealthTLSCA is the agent's tls.ca_file from its environment: a
// container's health check runs with the agent's variables.
const envHealthTLSCA = envPrefix + "TLS_CA_FILE"

// healthCA is the CA a TLS node is probed with: the flag, then
// STRATA_CA_FILE, then the agent's STRATA_TLS_CA_FILE; "" for plain HTTP.
func healthCA(flag string) string {
	for _, v := range []string{flag, os.Getenv(envCAFile), os.Getenv(envHealthTLSCA)} {
		if v != "" {
			return v
		}
	}
	return ""
}

// healthHost turns a listen address into one to dial: empty is the
// default, an unspecified host (":7100", "0.0.0.0:7100", "[::]:7100") is
// loopback.
func healthHost(listen string) string {
	if listen == "" {
		return defaultHealthAddr
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// probeHealth GETs url and returns its status line, or an error for a
// failed request or a status outside 2xx.
func probeHealth(ctx context.Context, hc *http.Client, url string, timeout time.Duration) (string, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", usageError{fmt.Errorf("health: %w", err)}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("health: %s: %s %s", url, resp.Status, body)
	}
	return resp.Status, nil
}

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-ledger/strata/transport/api"
)

// Where an API command finds its cluster when no address is given.
const (
	envAddr  = "STRATA_ADDR"
	envToken = "STRATA_TOKEN"
	// envCAFile names the cluster CA of a TLS cluster (as --ca-file).
	envCAFile = "STRATA_CA_FILE"
	// devClusterFile is where `strata dev` run from the same directory
	// writes its nodes' addresses and token.
	devClusterFile = ".strata-dev/cluster.json"
)

// Output formats of -o.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// clientFlags are the persistent flags of every command that calls the
// API (job, members, raft).
type clientFlags struct {
	addrs        []string
	token        string
	consistency  string
	maxStaleness time.Duration
	session      string
	durability   string
	output       string
	caFile       string // TLS: the cluster CA
	certFile     string // TLS: an optional client certificate
	keyFile      string
}

// addClientFlags declares the API flags on cmd and its subcommands.
func addClientFlags(cmd *cobra.Command) *clientFlags {
	f := &clientFlags{}
	fs := cmd.PersistentFlags()
	fs.StringSliceVar(&f.addrs, "addr", nil,
		"API address, host:port or http(s)://host:port; repeat or comma-separate for failover (env "+envAddr+"; default: the nodes of ./"+devClusterFile+")")
	fs.StringVar(&f.token, "token", "", "bearer token (env "+envToken+"; default: the token of ./"+devClusterFile+")")
	fs.StringVar(&f.consistency, "consistency", "", "read consistency: eventual, session, bounded or strong (default: the server's)")
	fs.DurationVar(&f.maxStaleness, "max-staleness", 0, "how far behind the leader a bounded read may be, e.g. 1s")
	fs.StringVar(&f.session, "session", "", "session token a write printed, to read that write (implies --consistency session)")
	fs.StringVar(&f.durability, "durability", "", "when a write is acknowledged: none, local, regional or global (default: the operation's tier)")
	fs.StringVarP(&f.output, "output", "o", outputTable, "output format: table or json")
	f.addTLSFlags(fs)
	return f
}

// addTLSFlags declares --ca-file, --cert-file and --key-file on fs.
func (f *clientFlags) addTLSFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.caFile, "ca-file", "", "cluster CA of a TLS cluster: addresses become https (env "+envCAFile+"; default: the CA of ./"+devClusterFile+")")
	fs.StringVar(&f.certFile, "cert-file", "", "client certificate (strata tls cert create --role client; default: the one of ./"+devClusterFile+")")
	fs.StringVar(&f.keyFile, "key-file", "", "client certificate's key")
}

// client checks the flags and builds an API client. Bad flag values are
// usage errors, reported before anything is sent.
func (f *clientFlags) client() (*api.Client, error) {
	if f.output != outputTable && f.output != outputJSON {
		return nil, usageError{fmt.Errorf("-o %q: want %s or %s", f.output, outputTable, outputJSON)}
	}
	if err := f.readOptions().Validate(); err != nil {
		return nil, usageError{err}
	}
	if err := f.writeOptions().Validate(); err != nil {
		return nil, usageError{err}
	}
	cc, err := f.target()
	if err != nil {
		return nil, err
	}
	c, err := api.New(cc)
	if err != nil {
		return nil, usageError{err}
	}
	return c, nil
}

// target picks the addresses, token and TLS: flags, then the environment,
// then the dev cluster file of the current directory.
func (f *clientFlags) target() (api.ClientConfig, error) {
	cc := api.ClientConfig{Token: f.token}
	if cc.Token == "" {
		cc.Token = os.Getenv(envToken)
	}
	tlsFiles := api.ClusterTLS{CAFile: f.caFile, CertFile: f.certFile, KeyFile: f.keyFile}
	if tlsFiles.CAFile == "" {
		tlsFiles.CAFile = os.Getenv(envCAFile)
	}
	if cc.Addrs = splitList(f.addrs); len(cc.Addrs) == 0 {
		cc.Addrs = splitList([]string{os.Getenv(envAddr)})
	}
	if len(cc.Addrs) == 0 {
		cf, err := api.LoadClusterFile(devClusterFile)
		if errors.Is(err, fs.ErrNotExist) {
			return cc, usageError{fmt.Errorf("no API address: give --addr host:port (several comma-separated for failover), set %s, or run from the directory where `strata dev` wrote %s", envAddr, devClusterFile)}
		}
		if err != nil {
			return cc, err
		}
		if cc.Token == "" {
			cc.Token = cf.Token
		}
		if tlsFiles.CAFile == "" && cf.TLS != nil {
			tlsFiles = *cf.TLS
		}
		cc.Addrs = cf.APIAddrs()
	}
	if tlsFiles.CAFile != "" {
		c, err := api.ClientTLS(tlsFiles.CAFile, tlsFiles.CertFile, tlsFiles.KeyFile)
		if err != nil {
			return cc, usageError{err}
		}
		cc.TLS = c
	}
	return cc, nil
}

func (f *clientFlags) readOptions() api.ReadOptions {
	return api.ReadOptions{Consistency: f.consistency, MaxStaleness: f.maxStaleness, Session: f.session}
}

func (f *clientFlags) writeOptions() api.WriteOptions {
	return api.WriteOptions{Durability: f.durability}
}

func (f *clientFlags) json() bool { return f.output == outputJSON }

// splitList flattens comma-separated values, dropping blanks.
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

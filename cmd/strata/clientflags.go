package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/transport/api"
)

// Where an API command finds its cluster when no address is given.
const (
	envAddr  = "STRATA_ADDR"
	envToken = "STRATA_TOKEN"
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
	return f
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
	addrs, token, err := f.target()
	if err != nil {
		return nil, err
	}
	c, err := api.New(api.ClientConfig{Addrs: addrs, Token: token})
	if err != nil {
		return nil, usageError{err}
	}
	return c, nil
}

// target picks the addresses and token: flags, then the environment, then
// the dev cluster file of the current directory.
func (f *clientFlags) target() (addrs []string, token string, err error) {
	token = f.token
	if token == "" {
		token = os.Getenv(envToken)
	}
	if addrs = splitList(f.addrs); len(addrs) > 0 {
		return addrs, token, nil
	}
	if addrs = splitList([]string{os.Getenv(envAddr)}); len(addrs) > 0 {
		return addrs, token, nil
	}
	cf, err := api.LoadClusterFile(devClusterFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", usageError{fmt.Errorf("no API address: give --addr host:port (several comma-separated for failover), set %s, or run from the directory where `strata dev` wrote %s", envAddr, devClusterFile)}
	}
	if err != nil {
		return nil, "", err
	}
	if token == "" {
		token = cf.Token
	}
	return cf.APIAddrs(), token, nil
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

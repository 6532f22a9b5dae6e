// Package tlsutil makes and loads the certificates of a Strata cluster and
// builds the *tls.Config every listener and client of a node uses.
//
// What it makes (certs.go, pure but for the random source): a cluster CA
// (ECDSA P-256, self-signed, 10 years) and certificates it signs for a node
// (a gate or a manager, valid for server and client use) or for a client
// (an operator's CLI, client use only). A node's certificate names its
// role, region and node id in its common name
// ("<node>.<role>.<region>.strata") and is valid for the hosts it is given
// plus localhost and 127.0.0.1. Files are PEM; private keys are written
// 0600 (files.go).
//
// What it serves (reloader.go): a Reloader holds the certificate, key and
// CA pool loaded from files and swaps all three at once on Reload, so a
// SIGHUP rotates certificates without a restart. Connections already open
// keep the certificate they were made with; every new handshake sees the
// current files. A failed Reload keeps what was loaded before.
//
// Invariants: a Reloader always holds a certificate that chains to the CA
// it holds (Reload refuses files that do not); every config it builds
// requires TLS 1.3 and verifies the peer against the CA of the moment,
// never against the system roots.
//
// A Reloader is safe for concurrent use. The package does not pick which
// listeners need client certificates: callers pass the tls.ClientAuthType.
package tlsutil

// Package integration runs real `strata agent` processes (a dev cluster of
// 3 regions x (1 gate + 3 managers) on loopback) and kills them with
// SIGKILL while clients write, checking that nothing acknowledged is lost.
// It has tests only; this file holds its doc comment.
package integration

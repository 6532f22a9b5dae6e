// Package compose drives the TLS three-region cluster of deploy/compose
// from the host: the smoke test (one job to COMPLETED over TLS) and the
// chaos run (load while containers are killed, paused and cut from their
// networks, then a check that every acknowledged job reached a terminal
// state in the global ledger). Both need Docker and a running cluster
// (`make compose-smoke`, `make compose-chaos` start one) and skip
// without STRATA_COMPOSE=1; the fault schedule's planner is pure and
// tested in every `make test`. It has tests only; this file holds its doc
// comment.
package compose

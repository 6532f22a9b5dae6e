// Package auth is who may call the API (DESIGN §9): bearer tokens bound to
// a tenant or to all, with scopes (jobs:read, jobs:write, operator), and
// the check of the cluster token nodes call each other's internal API
// with.
//
// Invariants: API tokens are kept and looked up by their SHA-256 digest
// (a lookup's timing says nothing of a token), the cluster token is
// compared in constant time; a token shorter than MinTokenLen is refused at configuration; a
// principal bound to one tenant never passes a check on another.
//
// Concurrency: an Authenticator is immutable after NewAuthenticator and
// safe for concurrent use.
//
// What it does not do: decide which route needs which scope (the API's
// route table does), or reload tokens (a restart does).
package auth

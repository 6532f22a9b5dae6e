// Package deploy holds the files a deployment of Strata needs — the
// node image (docker/), the TLS three-region compose cluster (compose/),
// Kubernetes manifests (k8s/), Prometheus scrape
// config and alert rules (prometheus/), a Grafana dashboard (grafana/);
// deploy/README.md says how to use them — and the tests that check them
// offline: the manifests against the code's routes and config keys, the
// rules and dashboard's PromQL against the metrics real nodes serve, and
// promtool where it is installed. It has no code of its own.
package deploy

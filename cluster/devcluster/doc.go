// Package devcluster plans and runs a whole multi-region Strata cluster on
// one machine, one `strata agent` process per node and, if asked, one
// `strata worker` process per reference worker. `strata dev` uses it to
// give a user a cluster to play with; integration tests use it to start,
// kill -9 and restart real node and worker processes.
//
// The plan (Plan) is a pure function of Options: every node gets its own
// loopback IP, 127.0.<SubnetBase+r>.<n> for region r and node n (gates
// first, then managers), and the same fixed ports, so a node's address says
// which region and node it is and the fault-injection layer, which tells
// peers apart by IP, sees every node as distinct. Tests pick their own
// SubnetBase so they never collide with a running dev cluster or with each
// other.
//
// The launcher (Cluster) owns a data directory:
//
//	DATA/secrets.json        API token, cluster token, TLS: gossip key (0600), reused on restart
//	DATA/cluster.json        api.ClusterFile: nodes, addresses, pids (0600)
//	DATA/<node_id>/agent.yaml  the node's config (0600: it holds the tokens)
//	DATA/<node_id>/agent.log   the node's stdout and stderr, appended
//	DATA/<node_id>/data        the node's own data_dir
//	DATA/<worker_id>/worker.log  a worker's stdout and stderr, appended
//	DATA/tls/                with Options.TLS: the cluster CA (ca-key.pem 0600),
//	                         each node's certificate and the CLI's (pki.go)
//
// With Options.TLS every node serves its API over TLS, calls its peers and
// runs Raft over mutual TLS, and encrypts gossip with a key kept in
// secrets.json; the workers get the CA in STRATA_CA_FILE, the launcher
// polls /readyz over TLS, and cluster.json's tls member names the CA and
// the CLI's client certificate. The certificates come from
// transport/tlsutil, as `strata tls` makes them; a restart reuses the CA
// and every certificate still good for a month.
//
// Workers (Options.WorkersPerRegion, PlanWorkers) are w-<region>-<i>, each
// pointed at its region's managers with the API token in its environment.
// Start starts them once every node is ready; StopAll stops them before
// the nodes, so they deregister while their managers still answer. Kill,
// Stop, Restart, StartNode and PID take a worker's id like a node's.
// Workers are not part of a cluster's shape: their number may change
// between runs on one data directory.
//
// Invariants: a data directory only ever holds one cluster shape; New
// refuses a plan whose nodes or addresses differ from the cluster.json
// already there, or whose TLS setting differs from the first run's.
// Every child runs in its own process group, so a Ctrl-C at the terminal
// reaches only the launcher, which then stops the nodes in order
// (SIGTERM, bounded, then SIGKILL). On Linux a child is also killed
// if the launcher dies, so crashed tests leave no nodes behind.
//
// A Cluster is safe for concurrent use. It does not restart nodes or
// workers that die on their own: it reports them (Config.OnExit) and
// leaves healing to the cluster.
package devcluster

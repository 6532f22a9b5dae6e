// Package dataplane is a manager's progress data plane (issue 14, DESIGN
// §4 and §10): a transport/progress Receiver on data_plane_addr folds
// workers' frames; every 2 ms what changed is staged in the NodeWAL
// (LOCAL, commit.Pipeline.Stage), and every commit interval (500 ms) the
// aggregates become WorkflowProgress events submitted at LOCAL, which
// climb to the regional ledger, after which the staged records they cover
// are released. After a crash the unreleased staged records come back
// (Recovered) and are committed again. Any manager of the region serves
// any worker: the frames' keys are derived from the cluster token and the
// worker's registration (views.go), never handed between managers. The
// latency histograms are not written anywhere: they become live samples
// (cluster/livestats) pushed to the gates (stats at NONE).
//
// It consumes narrow views of its node (Config): the ledger (Viewer),
// the pipeline (Pipeline), the API's report rules (Events) and the HLC.
package dataplane

package httpapi

import (
	"net/http"
	"time"

	"github.com/strata-ledger/strata/transport/api"
)

// GET /v1/snapshot (issue 15, operator): this node's ledger, the state of
// its Raft group as this node applied it, streamed from one read view
// (fsm.Ledger.Snapshot: a store image or the record stream, both with a
// header naming the applied index and checksummed). Headers name the
// group. strata snapshot save writes it to a file; strata snapshot
// inspect checks one offline.

// maxSnapshotDuration bounds the write deadline of one snapshot.
const maxSnapshotDuration = time.Hour

func (sv *Server) handleSnapshot(w http.ResponseWriter, _ *http.Request, _ *call) {
	sv.extendWriteDeadline(w, maxSnapshotDuration)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set(api.HeaderSnapshotGroup, sv.cfg.Group)
	w.Header().Set(api.HeaderSnapshotNode, sv.cfg.NodeID)
	if err := sv.cfg.Ledger.Snapshot(w); err != nil {
		sv.abortStream(err)
	}
}

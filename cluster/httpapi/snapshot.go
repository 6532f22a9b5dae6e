package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/strata-ledger/strata/cluster/backup"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
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

// POST /v1/snapshot (operator, the group's leader): disaster recovery —
// the group takes on the snapshot in the body (a GET /v1/snapshot or a
// backup of this group). It is proved first by a restore into a scratch
// store (a damaged one is a 400 and changes nothing), then handed to
// Raft, which keeps its configuration, installs it on every follower and
// answers once a follower has it. Only for recovery: the group's writes
// since the snapshot are gone.

const (
	// MaxRestoreBytes bounds a snapshot's upload.
	MaxRestoreBytes = 4 << 30
	// restoreTimeout bounds handing the snapshot to Raft.
	restoreTimeout = 10 * time.Minute
)

func (sv *Server) handleRestoreSnapshot(w http.ResponseWriter, r *http.Request, _ *call) {
	if !sv.cfg.Consensus.IsLeader() {
		l := sv.cfg.Consensus.Leader()
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusMisdirectedRequest, Code: httpx.CodeUnavailable,
			Message: fmt.Sprintf("restore a snapshot at the leader of group %s (%s)", sv.cfg.Group, orDash(l.ID)),
			Details: map[string]any{"leader": l.ID}})
		return
	}
	f, size, done, ok := sv.spoolUpload(w, r, MaxRestoreBytes, maxSnapshotDuration)
	if !ok {
		return
	}
	defer done()
	index, digest, err := backup.Prove(f.Name())
	if err != nil {
		httpx.WriteError(w, httpx.BadRequest("snapshot: %v", err))
		return
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable, Message: err.Error()})
		return
	}
	if err := sv.cfg.Consensus.RestoreSnapshot(index, size, f, restoreTimeout); err != nil {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable, Message: "restore: " + err.Error()})
		return
	}
	sv.log.Warn("group restored from an uploaded snapshot", "group", sv.cfg.Group, "snapshot_index", index)
	httpx.WriteJSON(w, http.StatusOK, api.RestoreResponse{Group: sv.cfg.Group, SnapshotIndex: index, Digest: digest.String()})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

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
// header naming the applied index and checksummed) behind the envelope
// naming the group, that index and the node's current Raft term
// (backup.WriteEnveloped), so a restore can refuse it in another group.
// Headers name the group too. strata snapshot save writes it to a file;
// strata snapshot inspect checks one offline.

// maxSnapshotDuration bounds the write deadline of one snapshot.
const maxSnapshotDuration = time.Hour

func (sv *Server) handleSnapshot(w http.ResponseWriter, _ *http.Request, _ *call) {
	sv.extendWriteDeadline(w, maxSnapshotDuration)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set(api.HeaderSnapshotGroup, sv.cfg.Group)
	w.Header().Set(api.HeaderSnapshotNode, sv.cfg.NodeID)
	if err := backup.WriteEnveloped(w, sv.cfg.Group, sv.cfg.Consensus.Status().Term, sv.cfg.Ledger.Snapshot); err != nil {
		sv.abortStream(err)
	}
}

// POST /v1/snapshot (operator, the group's leader): disaster recovery —
// the group takes on the snapshot in the body (a GET /v1/snapshot or a
// backup of this group). Its envelope must name this group: another
// group's snapshot (the gates' at a region's leader, or another region's)
// would replace this group's ledger with one it never held, so it is a
// 400 naming both. A bare ledger snapshot (written before envelopes) names
// no group and is restored only with ?group=<this group>, the operator's
// word for it. The snapshot is then proved by a restore into a scratch
// store (a damaged one is a 400 and changes nothing), and the ledger
// snapshot behind the envelope is handed to Raft, which keeps its
// configuration, installs it on every follower and answers once a
// follower has it. Only for recovery: the group's writes since the
// snapshot are gone.

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
	confirm := r.URL.Query().Get("group")
	f, size, done, ok := sv.spoolUpload(w, r, MaxRestoreBytes, maxSnapshotDuration)
	if !ok {
		return
	}
	defer done()
	env, _, _, err := backup.ReadEnvelope(f) // a bare snapshot: no group
	if err != nil {
		httpx.WriteError(w, httpx.BadRequest("snapshot: %v", err))
		return
	}
	if e := restoreGroupError(env.Group, confirm, sv.cfg.Group); e != nil {
		httpx.WriteError(w, e)
		return
	}
	info, err := backup.Inspect(f.Name())
	if err != nil {
		httpx.WriteError(w, httpx.BadRequest("snapshot: %v", err))
		return
	}
	body := io.NewSectionReader(f, info.Offset, size-info.Offset)
	if err := sv.cfg.Consensus.RestoreSnapshot(info.Index, body.Size(), body, restoreTimeout); err != nil {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable, Message: "restore: " + err.Error()})
		return
	}
	sv.log.Warn("group restored from an uploaded snapshot", "group", sv.cfg.Group, "snapshot_index", info.Index,
		"snapshot_term", info.Term, "snapshot_group", orDash(info.Group))
	httpx.WriteJSON(w, http.StatusOK, api.RestoreResponse{Group: sv.cfg.Group, SnapshotIndex: info.Index, Digest: info.Digest.String()})
}

// restoreGroupError says why a snapshot of group snap ("" when it names
// none) may not be restored into group here, given the ?group= the
// operator sent (confirm, "" if none); nil when it may.
func restoreGroupError(snap, confirm, here string) *httpx.APIError {
	details := map[string]any{"group": here, "snapshot_group": snap}
	switch {
	case snap != "" && snap != here:
		return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest, Details: details,
			Message: fmt.Sprintf("snapshot: it is of group %s, and this node leads group %s: restore it at a leader of group %s", snap, here, snap)}
	case confirm != "" && confirm != here:
		return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest, Details: details,
			Message: fmt.Sprintf("snapshot: ?group=%s, and this node leads group %s", confirm, here)}
	case snap == "" && confirm == "":
		return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest, Details: details,
			Message: fmt.Sprintf("snapshot: it names no group (written before snapshots carried one); to restore it into group %s, confirm with ?group=%s", here, here)}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

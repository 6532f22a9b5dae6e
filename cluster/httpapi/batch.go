package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// POST /v1/events:batch: many events in one request. Job events land in
// the global ledger (gates), workflow and worker events in the region's
// ledger (managers); a batch must be one or the other, and a node of the
// other role forwards it. Who may write which events, and what the node
// stamps itself, is batch_stamp.go's.

// batchTier is the role whose ledger the events land in.
func batchTier(events []fsm.Event) (Role, string, error) {
	var role Role
	region := ""
	for i := range events {
		r := RoleManager
		if events[i].Type.IsJob() {
			r = RoleGate
		}
		if role != "" && r != role {
			return "", "", httpx.BadRequest("events[%d]: a batch holds either job events (global ledger) or workflow and worker events (regional ledger), not both", i)
		}
		role = r
		if r == RoleManager && events[i].Region != "" {
			if region != "" && events[i].Region != region {
				return "", "", httpx.BadRequest("events[%d]: workflow events of one batch must be of one region (%s, %s)", i, region, events[i].Region)
			}
			region = events[i].Region
		}
	}
	return role, region, nil
}

func (sv *Server) handleEventsBatch(w http.ResponseWriter, r *http.Request, c *call) {
	p, body := c.p, c.body
	level, err := parseWriteLevel(r)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	req, err := decodeBatchRequest(body)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	role, region, err := batchTier(req.Events)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	if role != sv.cfg.Role {
		if role == RoleManager && region != "" && region != sv.cfg.Region {
			httpx.WriteError(w, httpx.BadRequest("workflow events of region %s go to a manager of %s; this is %s of %s", region, region, sv.cfg.NodeID, sv.cfg.Region))
			return
		}
		sv.forwardToRole(w, r, body, role)
		return
	}
	if err := sv.stampEvents(p, req.Events); err != nil {
		writeError(w, err) // a quota's 429 carries Retry-After
		return
	}
	if err := checkLevel(level, sv.cfg.Tier); err != nil {
		httpx.WriteError(w, err)
		return
	}
	if level == 0 {
		level = sv.cfg.Tier
	}
	res, err := sv.cfg.Writer.Submit(r.Context(), req.Events, level)
	if err != nil {
		httpx.WriteError(w, submitError(err, res, sv.cfg.NodeID))
		return
	}
	out := api.BatchResponse{WriteResponse: sv.writeResponse(w, res, req.Events[0].HLC)}
	if len(res.Results) > 0 {
		out.Results = make([]api.EventResult, 0, len(res.Results))
	}
	for i, rs := range res.Results {
		er := api.EventResult{ID: req.Events[i].ID, Outcome: rs.Outcome.String(), Seq: rs.Seq}
		if req.Events[i].Type == fsm.TypeJobCreated {
			er.JobID = req.Events[i].JobID
		}
		if rs.Err != nil {
			var ae *httpx.APIError
			if errors.As(eventError(rs.Err), &ae) {
				er.Error = ae
			}
		}
		out.Results = append(out.Results, er)
	}
	writeBatchAnswer(w, http.StatusOK, &out)
}

// parseWriteLevel parses durability= (0 when absent) without checking it
// against a tier: a batch may be forwarded to the other role.
func parseWriteLevel(r *http.Request) (commit.Durability, error) {
	s := queryValue(r.URL, api.ParamDurability)
	if s == "" {
		return 0, nil
	}
	d, err := commit.ParseDurability(s)
	if err != nil {
		return 0, httpx.BadRequest("durability %q must be none, local, regional or global", s)
	}
	return d, nil
}

// checkLevel refuses a level above the tier (0: the tier's default).
func checkLevel(d, tier commit.Durability) error {
	if d == 0 {
		return nil
	}
	if _, err := commit.AckLevel(d, tier); err != nil {
		return httpx.BadRequest("%v", err)
	}
	return nil
}

// decodeBatchRequest decodes {"events": [...]}. The usual form takes
// fsm.ReadEventsJSON, one pass without reflection; anything else takes
// decodeBatchStandard, which decides and writes every error, so both paths
// accept and refuse alike (FuzzDecodeBatchMatchesReference).
func decodeBatchRequest(body []byte) (api.BatchRequest, error) {
	if events, ok := readBatch(body); ok {
		return api.BatchRequest{Events: events}, nil
	}
	return decodeBatchStandard(body)
}

// readBatch reads a non-empty {"events": [...]} within the count limit
// whose events fsm.ReadEventsJSON takes; false leaves the request to
// decodeBatchStandard.
func readBatch(body []byte) ([]fsm.Event, bool) {
	i, ok := skipToken(body, 0, `{`)
	if ok {
		i, ok = skipToken(body, i, `"events"`)
	}
	if ok {
		i, ok = skipToken(body, i, `:`)
	}
	if !ok {
		return nil, false
	}
	events, n, ok := fsm.ReadEventsJSON(body[i:], fsm.MaxBatchEvents)
	if !ok || len(events) == 0 {
		return nil, false
	}
	if i, ok = skipToken(body, i+n, `}`); !ok || skipSpace(body, i) != len(body) {
		return nil, false
	}
	return events, true
}

// skipToken skips whitespace and tok at b[i:], returning where it ends.
func skipToken(b []byte, i int, tok string) (int, bool) {
	i = skipSpace(b, i)
	if !bytes.HasPrefix(b[i:], []byte(tok)) {
		return i, false
	}
	return i + len(tok), true
}

// skipSpace returns the index of the first non-whitespace byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// decodeBatchStandard decodes {"events": [...]} with encoding/json: it walks
// the array token by token and decodes each event in place, so the count is
// checked before an event past the limit is decoded and every event's error
// names its index.
func decodeBatchStandard(body []byte) (api.BatchRequest, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var req api.BatchRequest
	if err := expectDelim(dec, '{'); err != nil {
		return req, err
	}
	seen := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return req, httpx.JSONError(err, httpx.MaxRequestBytes)
		}
		if key, _ := tok.(string); key != "events" || seen {
			return req, httpx.BadRequest("unknown or repeated field %v: a batch is {\"events\": [...]}", tok)
		}
		seen = true
		if err := expectDelim(dec, '['); err != nil {
			return req, err
		}
		for dec.More() {
			if len(req.Events) == fsm.MaxBatchEvents {
				return req, &httpx.APIError{Status: http.StatusRequestEntityTooLarge, Code: httpx.CodeTooLarge,
					Message: fmt.Sprintf("more than %d events in one batch", fsm.MaxBatchEvents),
					Details: map[string]any{"limit": fsm.MaxBatchEvents}}
			}
			req.Events = append(req.Events, fsm.Event{})
			if err := dec.Decode(&req.Events[len(req.Events)-1]); err != nil {
				if errors.Is(err, io.EOF) {
					err = errors.New("body is missing")
				}
				return req, httpx.BadRequest("events[%d]: %v", len(req.Events)-1, err)
			}
		}
		if err := expectDelim(dec, ']'); err != nil {
			return req, err
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return req, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return req, httpx.BadRequest("request body holds more than one JSON value")
	}
	if len(req.Events) == 0 {
		return req, httpx.BadRequest("events: empty batch")
	}
	return req, nil
}

// expectDelim reads the next token and refuses anything but d.
func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return httpx.JSONError(err, httpx.MaxRequestBytes)
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		return httpx.BadRequest("malformed batch: want %q, got %v", d, tok)
	}
	return nil
}

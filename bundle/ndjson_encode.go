package bundle

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/strata-ledger/strata/fsm"
)

// lineEncoder writes NDJSON lines by hand: the fixed shape of a line and
// of the event around its body is appended field by field, and only the
// body goes through encoding/json, once (but a progress report's:
// appendBody). (json.Marshal of the line, as it
// was written before, ran the body's JSON through encoding/json's
// compaction three times over, the event's MarshalJSON and the line
// each re-checking their Marshaler's output: two thirds of its time.)
// The bytes are json.Marshal's of ndjsonLine exactly:
// TestLineEncoder_EqualsEncodingJSON and FuzzLineEncoder compare them.
type lineEncoder struct {
	body bytes.Buffer
	enc  *json.Encoder
}

func newLineEncoder() *lineEncoder {
	e := &lineEncoder{}
	e.enc = json.NewEncoder(&e.body) // escapes HTML as json.Marshal does
	return e
}

// appendLine appends se's line, newline included, to b: se's chain fields,
// prev (its previous link; "genesis" for seq 1) and its event.
func (e *lineEncoder) appendLine(b []byte, se *fsm.StoredEvent, prev *fsm.Hash) ([]byte, error) {
	ev := &se.Event
	if ev.Body == nil {
		return b, fmt.Errorf("event %s: no body", ev.ID)
	}
	if !ev.Type.Known() {
		return b, fmt.Errorf("event %s: unknown event type %d", ev.ID, uint8(ev.Type))
	}
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, se.Seq, 10)
	b = append(b, `,"prev_link":"`...)
	if se.Seq > 1 {
		b = hex.AppendEncode(b, prev[:])
	} else {
		b = append(b, genesisText...)
	}
	b = append(b, `","link":"`...)
	b = hex.AppendEncode(b, se.Link[:])
	b = append(b, `","body_hash":"`...)
	b = hex.AppendEncode(b, se.BodyHash[:])
	b = append(b, `","event":{"id":"`...)
	b = hex.AppendEncode(b, ev.ID[:])
	b = append(b, `","type":`...)
	b = appendJSONString(b, ev.Type.String())
	if ev.JobID != "" {
		b = append(b, `,"job_id":`...)
		b = appendJSONString(b, ev.JobID)
	}
	if ev.Tenant != "" {
		b = append(b, `,"tenant":`...)
		b = appendJSONString(b, ev.Tenant)
	}
	b = append(b, `,"region":`...)
	b = appendJSONString(b, ev.Region)
	b = append(b, `,"node":`...)
	b = appendJSONString(b, ev.Node)
	b = append(b, `,"hlc":"`...)
	b = ev.HLC.AppendText(b)
	b = append(b, `","fence":`...)
	b = strconv.AppendUint(b, ev.Fence, 10)
	b = append(b, `,"body":`...)
	b, err := e.appendBody(b, ev.Body)
	if err != nil {
		return b, fmt.Errorf("event %s: body: %w", ev.ID, err)
	}
	return append(b, "}}\n"...), nil
}

// appendBody appends body's JSON as json.Marshal writes it: by hand for
// the body most events of a ledger carry, a progress report (json.Marshal
// takes about three times as long over its stats, in Stats.MarshalJSON
// and in re-checking that method's output), by encoding/json otherwise.
func (e *lineEncoder) appendBody(b []byte, body fsm.Body) ([]byte, error) {
	if p, ok := body.(*fsm.JobProgressReported); ok && p != nil {
		return appendProgress(b, p), nil
	}
	e.body.Reset()
	if err := e.enc.Encode(body); err != nil {
		return b, err
	}
	out := e.body.Bytes()
	return append(b, out[:len(out)-1]...), nil // Encode's newline
}

// appendProgress appends p as json.Marshal writes it. Its fields are
// pinned: TestAppendProgress_KnowsEveryField fails if the type changes.
func appendProgress(b []byte, p *fsm.JobProgressReported) []byte {
	b = append(b, `{"region":`...)
	b = appendJSONString(b, p.Region)
	b = append(b, `,"completed":`...)
	b = strconv.AppendUint(b, p.Completed, 10)
	b = append(b, `,"failed":`...)
	b = strconv.AppendUint(b, p.Failed, 10)
	if len(p.Stats) > 0 { // omitempty
		b = append(b, `,"stats":{`...)
		for i, st := range p.Stats {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, st.Name)
			b = append(b, ':')
			b = strconv.AppendUint(b, st.Value, 10)
		}
		b = append(b, '}')
	}
	if p.Done {
		b = append(b, `,"done":true`...)
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string as json.Marshal writes it.
// The names of a ledger (tenants, regions, nodes, job ids) are plain
// ASCII, copied as they are; anything else (a byte json.Marshal escapes:
// a quote, a backslash, a control character, <, >, &, or any non-ASCII
// byte, for its handling of invalid UTF-8 and of U+2028 and U+2029) is
// left to json.Marshal itself.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

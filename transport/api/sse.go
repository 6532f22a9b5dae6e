package api

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// A small, strict reader of server-sent events (the text/event-stream of
// GET /v1/jobs/{id}/watch). It follows the WHATWG event-stream format with
// these deliberate restrictions, since both ends are ours: lines end with
// LF or CRLF (a bare CR is an error), the fields are event, data, id and
// retry (any other is an error), and a line or an event's data longer than
// MaxSSEBytes is an error, so a broken or hostile server cannot make the
// client allocate without bound.

// MaxSSEBytes bounds one event's data and, plus sseLineSlack for the
// field name, one line (a job state is a few KiB; a thousand workflows
// stay far below it).
const MaxSSEBytes = 1 << 20

// sseLineSlack is what a line may hold besides MaxSSEBytes of value: the
// field name, its colon and space, and the line end.
const sseLineSlack = 64

// maxSSERetry bounds a retry: field, as a sanity check.
const maxSSERetry = time.Hour

// ErrSSE marks a malformed event stream (errors.Is).
var ErrSSE = errors.New("malformed event stream")

// SSEEvent is one dispatched event.
type SSEEvent struct {
	// Event is the event: field; empty means "message".
	Event string
	// Data is the data: lines joined by LF.
	Data []byte
	// ID is the last id: field seen in the stream so far (it persists
	// across events, as the format says).
	ID string
	// Retry is the last retry: field seen, 0 if none.
	Retry time.Duration
}

// SSEReader reads events from a stream.
type SSEReader struct {
	r     *bufio.Reader
	line  []byte
	id    string
	retry time.Duration
	// Comments counts comment lines (keepalives) read so far.
	Comments int
}

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, 16<<10)}
}

// Next returns the next event. At the end of the stream it returns io.EOF
// when no event was in progress, io.ErrUnexpectedEOF when one was cut off
// (its partial data is dropped); a malformed stream gives an error that
// wraps ErrSSE. Events without data are skipped, as the format says.
func (s *SSEReader) Next() (SSEEvent, error) {
	var (
		ev      SSEEvent
		data    []byte
		hasData bool
		started bool // a field line was read since the last dispatch
	)
	for {
		line, err := s.readLine()
		if err == io.EOF {
			if started {
				return SSEEvent{}, io.ErrUnexpectedEOF
			}
			return SSEEvent{}, io.EOF
		}
		if err != nil {
			return SSEEvent{}, err
		}
		if len(line) == 0 {
			if hasData {
				ev.Data, ev.ID, ev.Retry = data, s.id, s.retry
				return ev, nil
			}
			ev, started = SSEEvent{}, false
			continue
		}
		if line[0] == ':' {
			s.Comments++
			continue
		}
		started = true
		name, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(name) {
		case "event":
			ev.Event = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			if len(data)+len(value) > MaxSSEBytes {
				return SSEEvent{}, fmt.Errorf("%w: event data over the limit of %d bytes", ErrSSE, MaxSSEBytes)
			}
			data, hasData = append(data, value...), true
		case "id":
			if bytes.IndexByte(value, 0) >= 0 {
				return SSEEvent{}, fmt.Errorf("%w: id contains NUL", ErrSSE)
			}
			s.id = string(value)
		case "retry":
			ms, err := strconv.ParseUint(string(value), 10, 32)
			if err != nil || time.Duration(ms)*time.Millisecond > maxSSERetry {
				return SSEEvent{}, fmt.Errorf("%w: retry %q is not milliseconds up to %s", ErrSSE, clip(string(value)), maxSSERetry)
			}
			s.retry = time.Duration(ms) * time.Millisecond
		default:
			return SSEEvent{}, fmt.Errorf("%w: unknown field %q", ErrSSE, clip(string(name)))
		}
	}
}

// readLine returns the next line without its LF or CRLF; the slice is
// valid until the next call.
func (s *SSEReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		if len(s.line)+len(chunk) > MaxSSEBytes+sseLineSlack {
			return nil, fmt.Errorf("%w: line over the limit of %d bytes", ErrSSE, MaxSSEBytes+sseLineSlack)
		}
		s.line = append(s.line, chunk...)
		switch {
		case err == nil:
			line := s.line[:len(s.line)-1]
			line = bytes.TrimSuffix(line, []byte("\r"))
			if bytes.IndexByte(line, '\r') >= 0 {
				return nil, fmt.Errorf("%w: bare CR inside a line", ErrSSE)
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(s.line) > 0:
			// A last line without its end: the stream was cut.
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

package api

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// readAll reads every event of s until the stream's end or an error.
func readAll(s string) ([]SSEEvent, error) {
	r := NewSSEReader(strings.NewReader(s))
	var out []SSEEvent
	for {
		ev, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSE_ReadsEvents(t *testing.T) {
	stream := ": hello\n" +
		"event: state\nid: 7\ndata: {\"a\":1}\n\n" +
		"data: line one\r\ndata:line two\r\ndata\r\n\r\n" + // CRLF, no space, empty value
		": keepalive\n\n" + // a comment and a blank line dispatch nothing
		"event: other\n\n" + // no data: skipped
		"retry: 1500\nevent: state\ndata: x\n\n"
	got, err := readAll(stream)
	if err != io.EOF {
		t.Fatalf("end: %v, want io.EOF", err)
	}
	want := []SSEEvent{
		{Event: "state", ID: "7", Data: []byte(`{"a":1}`)},
		{ID: "7", Data: []byte("line one\nline two\n")},
		{Event: "state", ID: "7", Data: []byte("x"), Retry: 1500 * time.Millisecond},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Event != w.Event || g.ID != w.ID || !bytes.Equal(g.Data, w.Data) || g.Retry != w.Retry {
			t.Errorf("event %d: got %+v (data %q), want %+v (data %q)", i, g, g.Data, w, w.Data)
		}
	}
}

func TestSSE_Comments(t *testing.T) {
	r := NewSSEReader(strings.NewReader(": keepalive\n\n: keepalive\n\n"))
	if _, err := r.Next(); err != io.EOF || r.Comments != 2 {
		t.Fatalf("err %v, %d comments; want io.EOF and 2", err, r.Comments)
	}
}

func TestSSE_RefusesMalformedStreams(t *testing.T) {
	long := strings.Repeat("x", MaxSSEBytes+sseLineSlack)
	half := strings.Repeat("y", MaxSSEBytes/2+1)
	tests := []struct {
		name, stream string
		want         error
	}{
		{"unknown field", "event: state\ncolor: red\n\n", ErrSSE},
		{"bare CR", "data: a\rdata: b\n\n", ErrSSE},
		{"NUL in id", "id: a\x00b\ndata: x\n\n", ErrSSE},
		{"bad retry", "retry: soon\ndata: x\n\n", ErrSSE},
		{"huge retry", "retry: 99999999999\ndata: x\n\n", ErrSSE},
		{"line over the limit", ": " + long + "\n\n", ErrSSE},
		{"data over the limit", "data: " + long[:MaxSSEBytes+1] + "\n\n", ErrSSE},
		{"data lines over the limit", "data: " + half + "\ndata: " + half + "\n\n", ErrSSE},
		{"cut inside an event", "event: state\ndata: x\n", io.ErrUnexpectedEOF},
		{"cut inside a line", "event: state\ndata: x", io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(tt.stream)
			if !errors.Is(err, tt.want) || len(got) != 0 {
				t.Fatalf("got %d events, err %v; want none and %v", len(got), err, tt.want)
			}
		})
	}
}

func TestSSE_EventUpToTheLimit(t *testing.T) {
	data := strings.Repeat("z", MaxSSEBytes)
	got, err := readAll("data: " + data + "\n\n")
	if err != io.EOF || len(got) != 1 || len(got[0].Data) != MaxSSEBytes {
		t.Fatalf("got %d events, err %v", len(got), err)
	}
}

// FuzzSSE: any input gives events within the limits, then io.EOF,
// io.ErrUnexpectedEOF or an ErrSSE, never a panic; a stream made by
// re-encoding the events reads back the same.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("event: state\nid: 3\ndata: {\"job_id\":\"x\"}\n\n: keepalive\n\n"))
	f.Add([]byte("data: a\r\ndata: b\r\n\r\n"))
	f.Add([]byte("retry: 10\nid\ndata\n\n"))
	f.Add([]byte("event: x\rdata: y\n\n"))
	f.Add([]byte(":\n\n\n\ndata:\n"))
	f.Add([]byte("\xef\xbb\xbfdata: bom\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewSSEReader(bytes.NewReader(b))
		var events []SSEEvent
		for range len(b) + 1 {
			ev, err := r.Next()
			if err != nil {
				if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.Is(err, ErrSSE) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			if len(ev.Data) > MaxSSEBytes || strings.ContainsAny(ev.Event, "\r\n") || strings.ContainsAny(ev.ID, "\r\n\x00") {
				t.Fatalf("event out of bounds: %+v", ev)
			}
			events = append(events, ev)
		}
		// Re-encode and read back.
		var enc bytes.Buffer
		for _, ev := range events {
			if ev.Event != "" {
				enc.WriteString("event: " + ev.Event + "\n")
			}
			enc.WriteString("id: " + ev.ID + "\n")
			for _, line := range strings.Split(string(ev.Data), "\n") {
				enc.WriteString("data: " + line + "\n")
			}
			enc.WriteString("\n")
		}
		back, err := readAll(enc.String())
		if err != io.EOF || len(back) != len(events) {
			t.Fatalf("re-read %d of %d events: %v", len(back), len(events), err)
		}
		for i := range events {
			if back[i].Event != events[i].Event || back[i].ID != events[i].ID || !bytes.Equal(back[i].Data, events[i].Data) {
				t.Fatalf("event %d: %+v became %+v", i, events[i], back[i])
			}
		}
	})
}

package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
)

// The per-request deadlines (deadline.go) on an httptest server, lowered
// to 200 ms (a margin for a loaded machine): where one must pass, the
// test waits three of them.

const testDeadline = 200 * time.Millisecond

// deadlineServer serves the handlers below behind sv's deadlines.
func deadlineServer(t *testing.T, to Timeouts) (*Server, *httptest.Server) {
	t.Helper()
	sv := &Server{}
	sv.SetTimeouts(to)
	mux := http.NewServeMux()
	// body reads the body, then works longer than the body's deadline:
	// its context must stay alive (the read deadline is gone).
	mux.HandleFunc("POST /body", func(w http.ResponseWriter, r *http.Request) {
		b, err := readBody(r)
		if err != nil {
			httpx.WriteError(w, err)
			return
		}
		select {
		case <-r.Context().Done():
			httpx.WriteError(w, fmt.Errorf("context ended after the body: %w", r.Context().Err()))
		case <-time.After(3 * to.Body):
			fmt.Fprintf(w, "%d", len(b))
		}
	})
	mux.HandleFunc("GET /fast", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	// slow answers after the write deadline passed, without extending it.
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(3 * to.Write)
		io.WriteString(w, "late")
	})
	// poll is a long-poll: it extends its deadline by what it waits.
	mux.HandleFunc("GET /poll", func(w http.ResponseWriter, r *http.Request) {
		wait := 3 * to.Write
		sv.extendWriteDeadline(w, wait)
		select {
		case <-r.Context().Done():
			httpx.WriteError(w, r.Context().Err())
		case <-time.After(wait):
			io.WriteString(w, "polled")
		}
	})
	// stream writes as a watch does (a deadline per write), across more
	// than the ordinary write deadline.
	mux.HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
		sw := newSSEWriter(w)
		defer sw.close()
		for i := range 3 {
			if i > 0 {
				time.Sleep(2 * to.Write)
			}
			if sw.comment(fmt.Sprint("tick ", i)) != nil {
				return
			}
		}
	})
	srv := httptest.NewServer(sv.deadlines(mux))
	t.Cleanup(srv.Close)
	return sv, srv
}

func get(t *testing.T, url string) (string, error) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%d %s", resp.StatusCode, b)
	}
	return string(b), err
}

// A client that sends its headers and then trickles its body slower than
// the body deadline gets a 408 (or its connection closed), while other
// clients are served, and a body that arrives in time leaves its handler
// a live context past the body deadline.
func TestDeadlines_TricklingBodyIsCutOffOthersAreServed(t *testing.T) {
	_, srv := deadlineServer(t, Timeouts{Body: testDeadline, Write: 10 * time.Second})
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const size = 1000
	if _, err := fmt.Fprintf(conn, "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", size); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	trickled := make(chan int)
	go func() {
		sent := 0
		defer func() { trickled <- sent }()
		tick := time.NewTicker(testDeadline / 5)
		defer tick.Stop()
		for ; sent < size; sent++ {
			if _, err := conn.Write([]byte{'x'}); err != nil {
				return
			}
			select {
			case <-tick.C:
			case <-stop:
				return
			}
		}
	}()
	// Others are served meanwhile: a fast GET, and a whole body.
	if got, err := get(t, srv.URL+"/fast"); err != nil || got != "ok" {
		t.Fatalf("a fast client beside the trickler: %q %v", got, err)
	}
	resp, err := http.Post(srv.URL+"/body", "application/octet-stream", strings.NewReader(strings.Repeat("y", 4096)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "4096" {
		t.Fatalf("a whole body beside the trickler: %d %s", resp.StatusCode, b)
	}
	// The trickler: 408, or its connection closed; never its body read.
	tr, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		b, _ := io.ReadAll(tr.Body)
		tr.Body.Close()
		if tr.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), `"code":"`+httpx.CodeTimeout+`"`) {
			t.Fatalf("trickled body: %d %s, want 408", tr.StatusCode, b)
		}
	}
	close(stop)
	if sent := <-trickled; sent >= size {
		t.Fatalf("the whole trickled body (%d bytes) was taken", sent)
	} else {
		t.Logf("trickler cut off after %d of %d bytes (answer: %v)", sent, size, err)
	}
}

// The write deadline ends an ordinary request whose answer comes too
// late; a long-poll that extends it, and a stream that sets a deadline per
// write, outlive it.
func TestDeadlines_WriteDeadlineAndItsExtensions(t *testing.T) {
	_, srv := deadlineServer(t, Timeouts{Body: 10 * time.Second, Write: testDeadline})
	if got, err := get(t, srv.URL+"/slow"); err == nil {
		t.Fatalf("an answer after the write deadline went through: %q", got)
	}
	if got, err := get(t, srv.URL+"/poll"); err != nil || got != "polled" {
		t.Fatalf("long-poll: %q %v", got, err)
	}
	got, err := get(t, srv.URL+"/stream")
	if err != nil || got != ": tick 0\n\n: tick 1\n\n: tick 2\n\n" {
		t.Fatalf("stream: %q %v", got, err)
	}
	// The connection of each serves the next request with fresh deadlines.
	if got, err := get(t, srv.URL+"/fast"); err != nil || got != "ok" {
		t.Fatalf("after: %q %v", got, err)
	}
}

func TestProfileDuration(t *testing.T) {
	for _, tt := range []struct {
		url  string
		want time.Duration
	}{
		{"/v1/jobs?seconds=100", 0},
		{"/debug/pprof/profile", 30 * time.Second},
		{"/debug/pprof/profile?seconds=90", 90 * time.Second},
		{"/debug/pprof/profile?seconds=1e12", maxProfileExtension},
		{"/debug/pprof/profile?seconds=NaN", 30 * time.Second},
		{"/debug/pprof/trace?seconds=-4", time.Second},
		{"/debug/pprof/trace?seconds=2.5", 2500 * time.Millisecond},
	} {
		r := httptest.NewRequest("GET", tt.url, nil)
		if got := profileDuration(r); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.url, got, tt.want)
		}
	}
}

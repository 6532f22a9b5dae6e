package progress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// tcpLengthBytes is the frame length prefix on a TCP stream: 2 bytes,
// little-endian (FORMAT.md).
const tcpLengthBytes = 2

// acceptErrorPause bounds how fast a failing Accept (out of descriptors)
// is retried.
const acceptErrorPause = 10 * time.Millisecond

// acceptTCP accepts connections until the listener is closed; beyond
// MaxConns a new connection is closed at once and counted.
func (r *Receiver) acceptTCP(ln net.Listener) {
	defer r.readers.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if r.isClosed() {
				return
			}
			r.cfg.Logger.Debug("progress: tcp accept", "err", err)
			time.Sleep(acceptErrorPause)
			continue
		}
		select {
		case r.connSem <- struct{}{}:
		default:
			r.m.drop(ReasonConnLimit, 1)
			c.Close()
			continue
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			c.Close()
			<-r.connSem
			continue
		}
		r.conns[c] = struct{}{}
		r.readers.Add(1)
		r.mu.Unlock()
		go r.serveTCP(c)
	}
}

// serveTCP reads length-prefixed frames until the peer closes, idles past
// TCPIdleTimeout or sends a length out of bounds (the stream cannot be
// resynchronised, so the connection is closed).
func (r *Receiver) serveTCP(c net.Conn) {
	defer func() {
		r.mu.Lock()
		delete(r.conns, c)
		r.mu.Unlock()
		<-r.connSem // before Close: a peer that saw the close finds its slot free
		c.Close()
		r.readers.Done()
	}()
	br := bufio.NewReaderSize(c, r.cfg.MaxFrameBytes+tcpLengthBytes)
	for {
		if err := c.SetReadDeadline(time.Now().Add(r.cfg.TCPIdleTimeout)); err != nil {
			return
		}
		fb := r.getBuf()
		n, err := readStreamFrame(br, fb.b, r.cfg.MaxFrameBytes)
		if err != nil {
			r.bufs.Put(fb)
			switch {
			case errors.Is(err, ErrTooLarge):
				r.m.drop(ReasonTooLarge, 1)
			case errors.Is(err, ErrMalformed):
				r.m.drop(ReasonMalformed, 1)
			default:
				r.logStreamEnd(err)
			}
			return
		}
		fb.n = n
		if !r.enqueue(fb) {
			r.bufs.Put(fb)
		}
	}
}

// readStreamFrame reads one length-prefixed frame into buf (at least
// maxFrame bytes) and returns its length. A length below the smallest frame
// is ErrMalformed and one above maxFrame ErrTooLarge, both checked before
// reading the frame; the stream is then unusable.
func readStreamFrame(r io.Reader, buf []byte, maxFrame int) (int, error) {
	var prefix [tcpLengthBytes]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return 0, err
	}
	n := int(binary.LittleEndian.Uint16(prefix[:]))
	switch {
	case n < minFrameBytes:
		return 0, fmt.Errorf("%w: stream frame length %d", ErrMalformed, n)
	case n > maxFrame:
		return 0, fmt.Errorf("%w: stream frame length %d, at most %d", ErrTooLarge, n, maxFrame)
	}
	if _, err := io.ReadFull(r, buf[:n]); err != nil {
		return 0, err
	}
	return n, nil
}

// appendStreamFrame appends frame with its length prefix.
func appendStreamFrame(dst, frame []byte) []byte {
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(frame)))
	return append(dst, frame...)
}

func (r *Receiver) logStreamEnd(err error) {
	if !errors.Is(err, io.EOF) && !r.isClosed() {
		r.cfg.Logger.Debug("progress: tcp read", "err", err)
	}
}

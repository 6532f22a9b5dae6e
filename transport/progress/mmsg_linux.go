package progress

import (
	"fmt"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsgReader reads up to len(hdrs) datagrams per recvmmsg(2) into fixed
// buffers, asking for no source address, so a read allocates nothing
// (x/net's ipv4.ReadBatch allocates the address of every datagram).
// Not safe for concurrent use.
type mmsgReader struct {
	rc   syscall.RawConn
	hdrs []unix.Mmsghdr
	iovs []unix.Iovec
	bufs [][]byte // keeps the buffers the iovecs point into alive
	n    int
	err  error
	fn   func(fd uintptr) bool
}

const batchReadSupported = true

func newBatchReader(conn *net.UDPConn, batch int) (*mmsgReader, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("udp raw conn: %w", err)
	}
	m := &mmsgReader{rc: rc, hdrs: make([]unix.Mmsghdr, batch), iovs: make([]unix.Iovec, batch), bufs: make([][]byte, batch)}
	m.fn = m.recv
	return m, nil
}

// setBuf makes b the buffer of message i.
func (m *mmsgReader) setBuf(i int, b []byte) {
	m.bufs[i] = b
	m.iovs[i].Base = &b[0]
	m.iovs[i].SetLen(len(b))
	m.hdrs[i].Hdr.Iov = &m.iovs[i]
	m.hdrs[i].Hdr.SetIovlen(1)
}

// read blocks (in the runtime poller) until at least one datagram is
// queued, then returns how many it read; lengths are in size(i).
func (m *mmsgReader) read() (int, error) {
	if err := m.rc.Read(m.fn); err != nil {
		return 0, err
	}
	return m.n, m.err
}

func (m *mmsgReader) size(i int) int { return int(m.hdrs[i].Len) }

// recv is the RawConn.Read callback: false asks the poller to wait.
func (m *mmsgReader) recv(fd uintptr) bool {
	n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&m.hdrs[0])), uintptr(len(m.hdrs)), unix.MSG_DONTWAIT, 0, 0)
	switch errno {
	case 0:
		m.n, m.err = int(n), nil
	case unix.EAGAIN:
		return false
	case unix.EINTR:
		return false
	default:
		m.n, m.err = 0, fmt.Errorf("recvmmsg: %w", errno)
	}
	return true
}

//go:build !linux

package progress

import (
	"errors"
	"net"
)

// Batched reads need recvmmsg(2); elsewhere the receiver reads one
// datagram per call.
const batchReadSupported = false

type mmsgReader struct{}

func newBatchReader(*net.UDPConn, int) (*mmsgReader, error) {
	return nil, errors.New("batched UDP reads need linux")
}
func (*mmsgReader) setBuf(int, []byte) {}
func (*mmsgReader) read() (int, error) { return 0, errors.New("unsupported") }
func (*mmsgReader) size(int) int       { return 0 }

package progress

import (
	"net"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// batchReader reads many datagrams per system call (recvmmsg on Linux).
type batchReader interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
}

// readUDP reads datagrams until the socket is closed, ReadBatch at a time
// (one per call when ReadBatch is 1), and queues them.
func (r *Receiver) readUDP(conn *net.UDPConn) {
	defer r.readers.Done()
	if r.cfg.ReadBatch == 1 {
		r.readUDPSingle(conn)
		return
	}
	var br batchReader = ipv4.NewPacketConn(conn)
	if a, ok := conn.LocalAddr().(*net.UDPAddr); ok && a.IP.To4() == nil && a.IP != nil && !a.IP.IsUnspecified() {
		br = ipv6.NewPacketConn(conn)
	}
	msgs := make([]ipv4.Message, r.cfg.ReadBatch)
	bufs := make([]*frameBuf, r.cfg.ReadBatch)
	for i := range msgs {
		bufs[i] = r.getBuf()
		msgs[i].Buffers = [][]byte{bufs[i].b}
	}
	for {
		n, err := br.ReadBatch(msgs, 0)
		if err != nil {
			if r.isClosed() {
				return
			}
			r.cfg.Logger.Debug("progress: udp read", "err", err)
			continue
		}
		for i := range n {
			bufs[i].n = msgs[i].N
			if r.enqueue(bufs[i]) {
				bufs[i] = r.getBuf()
				msgs[i].Buffers[0] = bufs[i].b
			}
		}
	}
}

func (r *Receiver) readUDPSingle(conn *net.UDPConn) {
	fb := r.getBuf()
	for {
		n, err := conn.Read(fb.b)
		if err != nil {
			if r.isClosed() {
				return
			}
			r.cfg.Logger.Debug("progress: udp read", "err", err)
			continue
		}
		fb.n = n
		if r.enqueue(fb) {
			fb = r.getBuf()
		}
	}
}

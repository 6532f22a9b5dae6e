package progress

import "net"

// readUDP reads datagrams until the socket is closed, ReadBatch at a time
// (recvmmsg on Linux; one per call when ReadBatch is 1 or elsewhere), and
// queues them.
func (r *Receiver) readUDP(conn *net.UDPConn) {
	defer r.readers.Done()
	if r.cfg.ReadBatch == 1 || !batchReadSupported {
		r.readUDPSingle(conn)
		return
	}
	br, err := newBatchReader(conn, r.cfg.ReadBatch)
	if err != nil {
		r.cfg.Logger.Warn("progress: batched udp reads unavailable, reading one at a time", "err", err)
		r.readUDPSingle(conn)
		return
	}
	bufs := make([]*frameBuf, r.cfg.ReadBatch)
	for i := range bufs {
		bufs[i] = r.getBuf()
		br.setBuf(i, bufs[i].b)
	}
	for {
		n, err := br.read()
		if err != nil {
			if r.isClosed() {
				return
			}
			r.cfg.Logger.Debug("progress: udp read", "err", err)
			continue
		}
		for i := range n {
			bufs[i].n = br.size(i)
			if r.enqueue(bufs[i]) {
				bufs[i] = r.getBuf()
				br.setBuf(i, bufs[i].b)
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

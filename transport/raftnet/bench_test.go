package raftnet

import (
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/strata-ledger/strata/transport/faultnet"
)

// benchConns connects a client layer on 127.0.0.1 to a server layer on
// 127.0.0.2 and returns both ends of the connection.
func benchConns(b *testing.B, layer string) (client, server net.Conn) {
	b.Helper()
	wrap := func(s *StreamLayer) raft.StreamLayer {
		b.Cleanup(func() { _ = s.Close() })
		if layer == "plain" {
			return s
		}
		f, err := faultnet.New(faultnet.Config{})
		if err != nil {
			b.Fatal(err)
		}
		return WithFaults(s, f)
	}
	srv, err := Listen(Config{ListenAddr: "127.0.0.2:0"})
	if err != nil {
		b.Fatal(err)
	}
	cli, err := Listen(Config{ListenAddr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	srvLayer, cliLayer := wrap(srv), wrap(cli)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := srvLayer.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err = cliLayer.Dial(raft.ServerAddress(srvLayer.Addr().String()), 5*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	server, ok := <-accepted
	if !ok {
		b.Fatal("accept failed")
	}
	b.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	return client, server
}

// BenchmarkStreamThroughput writes chunks one way as fast as the reader
// drains them, through the bare stream layer ("plain") and through the same
// wrapped in a fault layer with no rules ("faults-inactive"): the difference
// is what the idle fault layer costs.
func BenchmarkStreamThroughput(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10} {
		for _, layer := range []string{"plain", "faults-inactive"} {
			b.Run(fmt.Sprintf("bytes=%d/layer=%s", size, layer), func(b *testing.B) {
				client, server := benchConns(b, layer)
				drained := make(chan struct{})
				go func() {
					_, _ = io.Copy(io.Discard, server)
					close(drained)
				}()
				buf := make([]byte, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := client.Write(buf); err != nil {
						b.Fatal(err)
					}
				}
				_ = client.Close()
				<-drained
			})
		}
	}
}

// BenchmarkStreamRoundTrip sends a small message and waits for its echo,
// as a Raft heartbeat does.
func BenchmarkStreamRoundTrip(b *testing.B) {
	const size = 64
	for _, layer := range []string{"plain", "faults-inactive"} {
		b.Run(fmt.Sprintf("bytes=%d/layer=%s", size, layer), func(b *testing.B) {
			client, server := benchConns(b, layer)
			go func() { _, _ = io.Copy(server, server) }()
			buf := make([]byte, size)
			b.SetBytes(2 * size)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.Write(buf); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(client, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

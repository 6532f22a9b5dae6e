package raftnet

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/strata-ledger/strata/transport/faultnet"
)

func listenLayer(t *testing.T, cfg Config) *StreamLayer {
	t.Helper()
	s, err := Listen(cfg)
	if err != nil {
		t.Fatalf("listen %s: %v", cfg.ListenAddr, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// echo serves every accepted connection by echoing it back.
func echo(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_, _ = io.Copy(c, c)
		}()
	}
}

func TestConfig_Validate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want error
	}{
		{"listen address", Config{ListenAddr: "127.0.0.1:0"}, nil},
		{"no port", Config{ListenAddr: "127.0.0.1"}, ErrInvalidConfig},
		{"advertise unspecified", Config{ListenAddr: ":0", AdvertiseAddr: "0.0.0.0:7000"}, ErrInvalidConfig},
		{"advertise specific", Config{ListenAddr: ":0", AdvertiseAddr: "10.1.2.3:7000"}, nil},
		{"negative handshake timeout", Config{ListenAddr: ":0", HandshakeTimeout: -1}, ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); !errors.Is(err, tt.want) {
				t.Errorf("Validate() = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestListen_AddrIsAdvertiseAddrOrBoundAddr(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		wantBound bool
		want      string
	}{
		{name: "bound", cfg: Config{ListenAddr: "127.0.0.1:0"}, wantBound: true},
		{name: "advertised", cfg: Config{ListenAddr: "127.0.0.1:0", AdvertiseAddr: "10.1.2.3:7000"}, want: "10.1.2.3:7000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := listenLayer(t, tt.cfg)
			want := tt.want
			if tt.wantBound {
				want = s.ln.Addr().String()
			}
			if got := s.Addr().String(); got != want {
				t.Errorf("Addr() = %s, want %s", got, want)
			}
		})
	}
	if _, err := Listen(Config{ListenAddr: "0.0.0.0:0"}); err == nil {
		t.Error("Listen on 0.0.0.0 without advertise address succeeded, want an error")
	}
}

func TestStreamLayer_DialsFromItsListenIP(t *testing.T) {
	server := listenLayer(t, Config{ListenAddr: "127.0.0.2:0"})
	client := listenLayer(t, Config{ListenAddr: "127.0.0.3:0"})
	go echo(server)
	c, err := client.Dial(raft.ServerAddress(server.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.LocalAddr().(*net.TCPAddr).IP.String(); got != "127.0.0.3" {
		t.Errorf("dial left from %s, want 127.0.0.3", got)
	}
}

func TestStreamLayer_TLSRejectsPeerOfAnotherCA(t *testing.T) {
	a, b, stranger := tlsPair(t)
	server := listenLayer(t, Config{ListenAddr: "127.0.0.2:0", TLS: b})
	go echo(server)
	addr := raft.ServerAddress(server.Addr().String())

	friend := listenLayer(t, Config{ListenAddr: "127.0.0.1:0", TLS: a})
	c, err := friend.Dial(addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial with a trusted certificate: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 4)); err != nil {
		t.Fatalf("echo over tls: %v", err)
	}
	if v := c.(*tls.Conn).ConnectionState().Version; v != tls.VersionTLS13 {
		t.Errorf("tls version %x, want TLS 1.3", v)
	}

	foe := listenLayer(t, Config{ListenAddr: "127.0.0.3:0", TLS: stranger})
	if c, err := foe.Dial(addr, 5*time.Second); err == nil {
		c.Close()
		t.Fatal("dial with an untrusted certificate succeeded")
	}
}

func TestFaultyStreamLayer_DelayedPeerRoundTripTakesAtLeastTheDelay(t *testing.T) {
	const delay = 30 * time.Millisecond
	server := listenLayer(t, Config{ListenAddr: "127.0.0.2:0"})
	go echo(server)
	faults, err := faultnet.New(faultnet.Config{})
	if err != nil {
		t.Fatal(err)
	}
	client := WithFaults(listenLayer(t, Config{ListenAddr: "127.0.0.1:0"}), faults)
	if err := faults.Delay("127.0.0.2", delay); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(raft.ServerAddress(server.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 1)
	for range 3 {
		start := time.Now()
		if _, err := c.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		if rtt := time.Since(start); rtt < delay {
			t.Fatalf("round trip %v, want >= %v", rtt, delay)
		}
	}
}

func TestFaultyStreamLayer_PartitionedDialFailsAndCloseReleasesIt(t *testing.T) {
	server := listenLayer(t, Config{ListenAddr: "127.0.0.2:0"})
	faults, err := faultnet.New(faultnet.Config{})
	if err != nil {
		t.Fatal(err)
	}
	client := WithFaults(listenLayer(t, Config{ListenAddr: "127.0.0.1:0"}), faults)
	faults.Partition(server.Addr().String())
	addr := raft.ServerAddress(server.Addr().String())
	if _, err := client.Dial(addr, 20*time.Millisecond); !errors.Is(err, faultnet.ErrPartitioned) {
		t.Fatalf("dial: err %v, want ErrPartitioned", err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := client.Dial(addr, 0) // no timeout: only Close ends it
		errc <- err
	}()
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, faultnet.ErrPartitioned) {
		t.Fatalf("dial after close: err %v, want ErrPartitioned", err)
	}
}

func TestFaultyStreamLayer_OnePartitionCutsEveryGroupOfAPeer(t *testing.T) {
	faults, err := faultnet.New(faultnet.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// The peer runs two Raft groups, each on its own listener; so does the
	// local node, both behind one fault layer.
	var conns []net.Conn
	for range 2 {
		server := listenLayer(t, Config{ListenAddr: "127.0.0.2:0"})
		go echo(server)
		client := WithFaults(listenLayer(t, Config{ListenAddr: "127.0.0.1:0"}), faults)
		c, err := client.Dial(raft.ServerAddress(server.Addr().String()), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		conns = append(conns, c)
	}
	faults.Partition("127.0.0.2")
	for i, c := range conns {
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, faultnet.ErrPartitioned) {
			t.Errorf("group %d: read err %v, want ErrPartitioned", i, err)
		}
	}
}

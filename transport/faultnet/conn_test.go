package faultnet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// Addresses: the node holding the rules is 127.0.0.1, its peer 127.0.0.2.
const (
	localIP = "127.0.0.1"
	peerIP  = "127.0.0.2"
)

// listen opens a raw listener on ip, closed at cleanup.
func listen(t *testing.T, ip string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// dialFrom returns a dial function that connects from ip to addr.
func dialFrom(ip, addr string) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		return d.DialContext(ctx, "tcp", addr)
	}
}

// connectToPeer dials the peer from the local node through f, and returns
// the faulty local end and the raw peer end.
func connectToPeer(t *testing.T, f *Faults) (net.Conn, net.Conn) {
	t.Helper()
	ln := listen(t, peerIP)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	local, err := f.Dial(ctx, ln.Addr().String(), dialFrom(localIP, ln.Addr().String()))
	if err != nil {
		t.Fatalf("dial peer: %v", err)
	}
	remote, ok := <-accepted
	if !ok {
		t.Fatal("peer accepted nothing")
	}
	t.Cleanup(func() { _ = local.Close(); _ = remote.Close() })
	return local, remote
}

func TestConn_DelayedWritesKeepTheirOrderUnderJitter(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	f := newFaults(t, Config{Seed: seed})
	local, remote := connectToPeer(t, f)
	if err := f.DelayWithJitter(peerIP, time.Millisecond, 3*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	const writes = 300
	done := make(chan error, 1)
	go func() {
		var b [4]byte
		for i := range uint32(writes) {
			binary.BigEndian.PutUint32(b[:], i)
			if _, err := local.Write(b[:]); err != nil {
				done <- err
				return
			}
			if i == writes/2 {
				f.HealAll() // switch to direct writes with bytes still queued
			}
		}
		done <- nil
	}()
	_ = remote.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [4]byte
	for want := range uint32(writes) {
		if _, err := io.ReadFull(remote, b[:]); err != nil {
			t.Fatalf("read %d: %v", want, err)
		}
		if got := binary.BigEndian.Uint32(b[:]); got != want {
			t.Fatalf("read %d, want %d: bytes reordered", got, want)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("write: %v", err)
	}
}

func TestConn_CloseFlushesQueuedBytesThenEOF(t *testing.T) {
	f := newFaults(t, Config{})
	local, remote := connectToPeer(t, f)
	if err := f.Delay(peerIP, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	msg := bytes.Repeat([]byte("strata"), 1000)
	if _, err := local.Write(msg); err != nil {
		t.Fatal(err)
	}
	if err := local.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := local.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after close: err %v, want net.ErrClosed", err)
	}
	_ = remote.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(remote)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("peer read %d bytes, want %d", len(got), len(msg))
	}
}

func TestConn_PartitionCutsLiveConnectionBothWays(t *testing.T) {
	f := newFaults(t, Config{})
	local, remote := connectToPeer(t, f)
	readErr := make(chan error, 1)
	go func() {
		_, err := local.Read(make([]byte, 1))
		readErr <- err
	}()
	f.Partition(peerIP)
	if err := <-readErr; !errors.Is(err, ErrPartitioned) {
		t.Fatalf("local read: err %v, want ErrPartitioned", err)
	}
	if _, err := local.Write([]byte("x")); !errors.Is(err, ErrPartitioned) {
		t.Fatalf("local write: err %v, want ErrPartitioned", err)
	}
	_ = remote.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := remote.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("peer read: err %v, want EOF", err)
	}
}

func TestDial_PartitionedPeerFailsAtTheDeadline(t *testing.T) {
	f := newFaults(t, Config{})
	ln := listen(t, peerIP)
	f.Partition(peerIP)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := f.Dial(ctx, ln.Addr().String(), dialFrom(localIP, ln.Addr().String()))
	if !errors.Is(err, ErrPartitioned) {
		t.Fatalf("dial: err %v, want ErrPartitioned", err)
	}
	if ctx.Err() == nil {
		t.Fatal("dial returned before its deadline")
	}

	f.Heal(peerIP)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	c, err := f.Dial(ctx2, ln.Addr().String(), dialFrom(localIP, ln.Addr().String()))
	if err != nil {
		t.Fatalf("dial after heal: %v", err)
	}
	_ = c.Close()
}

func TestListener_RefusesConnectionsFromPartitionedPeer(t *testing.T) {
	f := newFaults(t, Config{})
	ln := f.WrapListener(listen(t, localIP))
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	f.Partition(peerIP)
	dial := dialFrom(peerIP, ln.Addr().String())
	refused, err := dial(context.Background())
	if err != nil {
		t.Fatalf("raw dial: %v", err)
	}
	defer refused.Close()
	_ = refused.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := refused.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read on refused connection: err %v, want EOF", err)
	}

	f.HealAll()
	ok, err := dial(context.Background())
	if err != nil {
		t.Fatalf("raw dial after heal: %v", err)
	}
	defer ok.Close()
	select {
	case c := <-accepted:
		if got := c.(*Conn).Peer(); got != peerIP {
			t.Errorf("accepted peer %q, want %q", got, peerIP)
		}
		_ = c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("connection after heal not accepted")
	}
}

func TestConn_FullQueueBlocksWriterUntilItsDeadline(t *testing.T) {
	f := newFaults(t, Config{MaxQueuedBytesPerConn: 10})
	local, _ := connectToPeer(t, f)
	if err := f.Delay(peerIP, MaxDelay); err != nil {
		t.Fatal(err)
	}
	if _, err := local.Write(make([]byte, 8)); err != nil {
		t.Fatalf("first write: %v", err)
	}
	if err := local.SetWriteDeadline(time.Now().Add(30 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err := local.Write(make([]byte, 8))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("second write: err %v, want os.ErrDeadlineExceeded", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("second write: err %v is not a net.Error timeout", err)
	}
}

func TestConn_CloseReleasesBlockedWriter(t *testing.T) {
	f := newFaults(t, Config{MaxQueuedBytesPerConn: 10})
	local, _ := connectToPeer(t, f)
	if err := f.Delay(peerIP, MaxDelay); err != nil {
		t.Fatal(err)
	}
	if _, err := local.Write(make([]byte, 8)); err != nil {
		t.Fatalf("first write: %v", err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := local.Write(make([]byte, 8))
		errc <- err
	}()
	f.Partition(peerIP)
	if err := <-errc; !errors.Is(err, ErrPartitioned) {
		t.Fatalf("blocked write: err %v, want ErrPartitioned", err)
	}
}

package httpapi

import (
	"net"
	"testing"
	"time"
)

// Finding 5 of issue 17: a listener serves at most its limit of
// connections at once; the next is accepted when one closes.
func TestLimitListener_AcceptsAtMostNAtOnce(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := limitListener(raw, 2)
	defer ln.Close()
	accepted := make(chan net.Conn, 3)
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
	for range 3 {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first, second := <-accepted, <-accepted
	select {
	case c := <-accepted:
		t.Fatalf("a third connection %v was accepted over the limit of 2", c.RemoteAddr())
	case <-time.After(100 * time.Millisecond): // nothing may arrive: this bounds the look
	}
	first.Close()
	first.Close() // a second Close gives back no second slot
	third := <-accepted
	second.Close()
	third.Close()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-accepted; ok {
		t.Fatal("Accept went on after Close")
	}
}

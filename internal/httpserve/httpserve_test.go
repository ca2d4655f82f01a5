package httpserve

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// The server holds at most MaxConns connections: one more is not served
// until one of them closes; it stops when its context is cancelled.
func TestServeBoundsConnections(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	served := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	go func() { served <- Serve(ctx, "test", ln, h) }()
	get := func(timeout time.Duration) error {
		c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + addr + "/")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return err
	}
	if err := get(5 * time.Second); err != nil {
		t.Fatalf("first request: %v", err)
	}
	var idle []net.Conn
	for i := 0; i < MaxConns; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	// Silent connections hold every slot (one of them may still wait for
	// the first request's slot to be released: the slots are full either way).
	if err := get(300 * time.Millisecond); err == nil {
		t.Fatalf("a request was served with %d connections open", MaxConns)
	}
	for _, c := range idle {
		c.Close()
	}
	if err := get(5 * time.Second); err != nil {
		t.Fatalf("after the connections closed: %v", err)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop")
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Fatal("still listening after the stop")
	}
}

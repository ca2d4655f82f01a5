package memnet_test

import (
	"testing"
	"time"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
)

// The same bytes sent to several peers, or forwarded as received, travel as
// one copy (what lets 10^5 simulated owners decode a control message or a
// roster chunk once); a buffer the sender changes between sends is copied
// anew, so nobody sees bytes that were not sent to it.
func TestSameBytesTravelAsOneCopy(t *testing.T) {
	net := memnet.New(memnet.Options{Deterministic: true, Delay: time.Millisecond})
	t.Cleanup(func() { net.Close() })
	got := map[protocol.PeerID][][]byte{}
	var eps []*memnet.Endpoint
	for _, id := range []protocol.PeerID{"user", "a", "b", "c"} {
		e, err := net.Join(id)
		if err != nil {
			t.Fatal(err)
		}
		e.SetHandler(func(m protocol.Message) { got[id] = append(got[id], m.Data) })
		eps = append(eps, e)
	}
	user, a := eps[0], eps[1]
	buf := []byte("select 1")
	for _, to := range []protocol.PeerID{"a", "b"} {
		if err := user.Send(ctx, to, "/test/1", buf); err != nil {
			t.Fatal(err)
		}
	}
	copy(buf, "SELECT 2") // the sender reuses its buffer
	if err := user.Send(ctx, "c", "/test/1", buf); err != nil {
		t.Fatal(err)
	}
	if err := net.RunUntil(func() bool { return len(got["c"]) > 0 }, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := a.Send(ctx, "c", "/test/1", got["a"][0]); err != nil { // forwarded as received
		t.Fatal(err)
	}
	if err := net.RunUntil(func() bool { return len(got["c"]) > 1 }, time.Second); err != nil {
		t.Fatal(err)
	}
	ga, gb, gc := got["a"][0], got["b"][0], got["c"]
	switch {
	case string(ga) != "select 1" || string(gb) != "select 1" || string(gc[0]) != "SELECT 2" || string(gc[1]) != "select 1":
		t.Fatalf("delivered %q, %q, %q", ga, gb, gc)
	case &ga[0] != &gb[0]:
		t.Fatal("the same bytes to two peers were copied twice")
	case &gc[1][0] != &ga[0]:
		t.Fatal("bytes forwarded as received were copied again")
	case &gc[0][0] == &ga[0] || &ga[0] == &buf[0]:
		t.Fatal("a changed buffer, or the sender's own buffer, was handed on")
	}
}

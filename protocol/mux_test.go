package protocol_test

import (
	"context"
	"testing"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// fakeTransport records joins and hands its handler to the test.
type fakeTransport struct {
	handler func(protocol.Message)
	joined  []string
}

func (f *fakeTransport) ID() protocol.PeerID                                         { return "me" }
func (f *fakeTransport) Join(t string) error                                         { f.joined = append(f.joined, t); return nil }
func (f *fakeTransport) Publish(context.Context, string, []byte) error               { return nil }
func (f *fakeTransport) Send(context.Context, protocol.PeerID, string, []byte) error { return nil }
func (f *fakeTransport) SetHandler(h func(protocol.Message))                         { f.handler = h }
func (f *fakeTransport) Close() error                                                { return nil }

// The mux routes by topic and protocol to the port of the message's
// system, refuses double claims and foreign joins, and counts what no
// port takes.
func TestMuxRoutesBySystem(t *testing.T) {
	base := &fakeTransport{}
	m := protocol.NewMux(base)
	wc, err := m.System(wire.WC())
	if err != nil {
		t.Fatal(err)
	}
	fed, err := m.System(wire.Fed())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Port("again", []string{wire.TopicControl}, nil); err == nil {
		t.Fatal("a second claim of the W&C control topic was allowed")
	}
	if err := fed.Join(wire.TopicControl); err == nil {
		t.Fatal("the fed port joined W&C's control topic")
	}
	if _, ok := wc.(protocol.AddressBook); ok {
		t.Fatal("a port claims an address book its transport lacks")
	}
	var gotWC, gotFed []protocol.Message
	wc.SetHandler(func(m protocol.Message) { gotWC = append(gotWC, m) })
	base.handler(protocol.Message{Topic: wire.TopicFedControl}) // fed has no handler yet
	fed.SetHandler(func(m protocol.Message) { gotFed = append(gotFed, m) })
	for _, msg := range []protocol.Message{
		{Topic: wire.TopicControl}, {Topic: wire.TopicShares}, {Protocol: wire.ProtoShamir}, {Protocol: wire.ProtoSession},
		{Topic: wire.TopicFedControl}, {Protocol: wire.ProtoFedShamir},
		{Topic: wire.TopicPFDS}, {Protocol: "/other/1.0.0"}, // no port
	} {
		base.handler(msg)
	}
	if len(gotWC) != 4 || len(gotFed) != 2 {
		t.Fatalf("W&C got %d, fed %d messages, want 4 and 2", len(gotWC), len(gotFed))
	}
	for _, m := range gotFed {
		if m.Topic != wire.TopicFedControl && m.Protocol != wire.ProtoFedShamir {
			t.Fatalf("fed port handed %+v", m)
		}
	}
	if u, n := m.Stats().Get("mux: unrouted"), m.Stats().Get("mux: no handler"); u != 2 || n != 1 {
		t.Fatalf("unrouted %d, no handler %d, want 2 and 1", u, n)
	}
	// A closed port's traffic is unrouted, and its system can be claimed again.
	fed.Close()
	base.handler(protocol.Message{Topic: wire.TopicFedControl})
	if len(gotFed) != 2 || m.Stats().Get("mux: unrouted") != 3 {
		t.Fatalf("closed port: fed got %d, unrouted %d", len(gotFed), m.Stats().Get("mux: unrouted"))
	}
	if _, err := m.System(wire.Fed()); err != nil {
		t.Fatalf("reclaim after close: %v", err)
	}
}

// addrTransport has an address book and an address lookup.
type addrTransport struct {
	fakeTransport
	added map[protocol.PeerID][]string
}

func (a *addrTransport) AddAddrs(p protocol.PeerID, addrs []string) { a.added[p] = addrs }
func (a *addrTransport) ListenAddrs() []string                      { return []string{"/me"} }
func (a *addrTransport) PeerAddrs(p protocol.PeerID) []string       { return a.added[p] }

// A port has the transport's AddressBook and AddressLookup exactly when the
// transport has them, and they reach the transport's.
func TestMuxPortForwardsAddresses(t *testing.T) {
	base := &addrTransport{added: map[protocol.PeerID][]string{}}
	m := protocol.NewMux(base)
	fed, err := m.System(wire.Fed())
	if err != nil {
		t.Fatal(err)
	}
	book, ok1 := fed.(protocol.AddressBook)
	look, ok2 := fed.(protocol.AddressLookup)
	if !ok1 || !ok2 {
		t.Fatalf("port: address book %v, lookup %v; want both", ok1, ok2)
	}
	book.AddAddrs("p", []string{"/a/p2p/p"})
	if got := look.PeerAddrs("p"); len(got) != 1 || got[0] != "/a/p2p/p" {
		t.Fatalf("PeerAddrs through the port: %v", got)
	}
	if _, ok := fed.(protocol.Validating); !ok {
		t.Fatal("the port lost its own methods")
	}
	wc, err := protocol.NewMux(&fakeTransport{}).System(wire.WC())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := wc.(protocol.AddressLookup); ok {
		t.Fatal("a port claims an address lookup its transport lacks")
	}
}

package node

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

func connectedTo(h *Host, o *Host) bool {
	pid, _ := peer.Decode(string(o.ID()))
	return h.Host().Network().Connectedness(pid) == network.Connected
}

// Prepare dials the named peers in the background from their roster
// addresses, skips itself, peers already connected and ids that do not
// parse, and counts a peer it cannot reach without blocking anyone.
func TestPrepareOpensConnections(t *testing.T) {
	a := newHost(t, nil)
	others := make([]*Host, 4)
	ids := []protocol.PeerID{a.ID(), "not-a-peer-id"}
	for i := range others {
		others[i] = newHost(t, nil)
		a.AddAddrs(others[i].ID(), others[i].Addrs())
		ids = append(ids, others[i].ID())
	}
	gone := newHost(t, nil)
	a.AddAddrs(gone.ID(), gone.Addrs())
	ids = append(ids, gone.ID())
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	a.Prepare(context.Background(), ids)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Prepare blocked for %v", d)
	}
	eventually(t, "connections to the 4 live peers and the dead one's dial failed", func() bool {
		dialled, failed, _ := a.PrepareStats()
		return dialled == 4 && failed == 1
	})
	for i, o := range others {
		if !connectedTo(a, o) {
			t.Errorf("no connection to peer %d", i)
		}
	}
	if _, _, skipped := a.PrepareStats(); skipped != 2 {
		t.Errorf("skipped %d, want 2 (itself and the bad id)", skipped)
	}
	// Again: every live peer is connected already.
	a.Prepare(context.Background(), ids[:6])
	if dialled, _, skipped := a.PrepareStats(); dialled != 4 || skipped != 2+6 {
		t.Errorf("second Prepare: dialled %d, skipped %d; want 4 and 8", dialled, skipped)
	}
}

// PrepareThen runs done once every dial it started has ended: connected
// or failed, never before (the federated configuration's ack waits for
// it); at once with nothing to dial, and after a Close too.
func TestPrepareThenRunsDoneAfterTheDials(t *testing.T) {
	a := newHost(t, nil)
	live := newHost(t, nil)
	gone := newHost(t, nil)
	for _, o := range []*Host{live, gone} {
		a.AddAddrs(o.ID(), o.Addrs())
	}
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	done := make(chan [2]int64, 1)
	a.PrepareThen(context.Background(), []protocol.PeerID{live.ID(), gone.ID()}, func() {
		dialled, failed, _ := a.PrepareStats()
		done <- [2]int64{dialled, failed}
	})
	select {
	case got := <-done:
		if got != [2]int64{1, 1} {
			t.Fatalf("done ran with %d dialled and %d failed, want 1 and 1: before the dials ended", got[0], got[1])
		}
		if !connectedTo(a, live) {
			t.Fatal("done ran before the live peer's connection was up")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("done never ran")
	}
	// Nothing to dial (connected already, itself): at once.
	now := make(chan struct{})
	a.PrepareThen(context.Background(), []protocol.PeerID{live.ID(), a.ID()}, func() { close(now) })
	select {
	case <-now:
	case <-time.After(5 * time.Second):
		t.Fatal("done did not run with nothing to dial")
	}
	// A closed host dials nothing, and still says so.
	b := newHost(t, nil)
	b.AddAddrs(live.ID(), live.Addrs())
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	b.PrepareThen(context.Background(), []protocol.PeerID{live.ID()}, func() { close(closed) })
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("done did not run on a closed host")
	}
}

// A cancelled context stops the dials: nothing is connected and Close does
// not wait for them.
func TestPrepareStopsWithItsContext(t *testing.T) {
	a := newHost(t, nil)
	b := newHost(t, nil)
	a.AddAddrs(b.ID(), b.Addrs())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a.Prepare(ctx, []protocol.PeerID{b.ID()})
	time.Sleep(100 * time.Millisecond)
	if dialled, _, _ := a.PrepareStats(); dialled != 0 || connectedTo(a, b) {
		t.Fatalf("dialled %d with a cancelled context", dialled)
	}
}

// BenchmarkFirstShamirSum measures the first secure sum among n owner hosts
// on loopback TCP, with the owner-to-owner connections opened beforehand by
// Prepare (what an owner does when the roster is fixed) or left to the sum
// (each share then pays a dial and a TLS handshake on its way). ns/op is the
// first sum alone; the hosts, the gossip mesh and the prepared connections
// are set up with the timer stopped.
func BenchmarkFirstShamirSum(b *testing.B) {
	for _, n := range []int{20, 30} {
		for _, prepared := range []bool{false, true} {
			b.Run(fmt.Sprintf("n=%d/prepared=%v", n, prepared), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					firstSum(b, n, prepared)
				}
			})
		}
	}
}

// firstSum builds a fresh cluster, starts the timer, runs one Shamir sum
// over all n owners (committee 32) and stops the timer.
func firstSum(b *testing.B, n int, prepared bool) {
	log := hclog.NewNullLogger()
	p := securesum.DefaultParams()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var closers []func()
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	mk := func() *Host {
		cfg := testConfig(b)
		cfg.ExpectedPeers, cfg.Logger = n+8, log
		h, err := New(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		closers = append(closers, func() { h.Close() })
		return h
	}
	env := func(h *Host, loop *engine.Driver, seed uint64) securesum.Env {
		post := protocol.NewOutbox(h, 10*time.Second, log)
		closers = append(closers, post.Close)
		return securesum.PosterEnv(h.ID(), post, loop, rng.Seeded(seed), log)
	}
	user := mk()
	userLoop := engine.NewDriver(engine.Config{})
	coord := securesum.NewCoordinator(env(user, userLoop, 1<<40), p)
	user.SetHandler(func(m protocol.Message) {
		if e, err := wire.Unmarshal(m.Data, wire.MaxSumFrameBytes); err == nil {
			userLoop.Do(func() { coord.Handle(m.From, e) })
		}
	})
	hosts := make([]*Host, n)
	roster := make([]protocol.PeerID, n)
	for i := range hosts {
		hosts[i] = mk()
		connect(b, hosts[i], user)
		roster[i] = hosts[i].ID()
	}
	slices.Sort(roster)
	want := 0.0
	for i, h := range hosts {
		for _, o := range hosts {
			h.AddAddrs(o.ID(), o.Addrs())
		}
		loop := engine.NewDriver(engine.Config{})
		party := securesum.NewParty(env(h, loop, uint64(i)), p)
		party.SetRoster(roster)
		v := []float64{float64(i%7) / 8, 1}
		want += v[0]
		h.SetHandler(func(m protocol.Message) {
			e, err := wire.Unmarshal(m.Data, wire.MaxControlBytes)
			if err != nil {
				return
			}
			loop.Do(func() {
				if s := e.GetSumStart(); s != nil {
					party.Begin(e.GetHeader(), s, roster, []byte("beacon"), user.ID(), v)
					return
				}
				party.Handle(m.From, e)
			})
		})
		if err := h.Join(wire.TopicControl); err != nil {
			b.Fatal(err)
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := user.WaitTopicPeers(wctx, wire.TopicControl, n); err != nil {
		b.Fatal(err)
	}
	if prepared {
		// The next n/2 owners of each in the sorted roster, as
		// securesum.PreparePeers does: every pair once.
		pos := map[protocol.PeerID]int{}
		for i, id := range roster {
			pos[id] = i
		}
		for _, h := range hosts {
			i := pos[h.ID()]
			var ps []protocol.PeerID
			for j := 1; j <= n/2; j++ {
				ps = append(ps, roster[(i+j)%n])
			}
			h.Prepare(ctx, ps)
		}
		// Concurrent handshakes on a busy machine: wait as an owner
		// would between the roster and the first sum, up to 3 minutes.
		ready := func() bool {
			for _, h := range hosts {
				if dialled, failed, skipped := h.PrepareStats(); dialled+failed+skipped < int64(n/2) {
					return false
				}
			}
			return true
		}
		for deadline := time.Now().Add(3 * time.Minute); !ready(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatal("connections not prepared within 3 minutes")
			}
		}
	}
	done := make(chan []float64, 1)
	h := &wire.Header{Version: wire.Version, Session: "bench", Round: 1}
	b.StartTimer()
	var err error
	userLoop.Call(context.Background(), func() {
		err = coord.Sum(securesum.Request{Header: h, Purpose: "err", Roster: roster, Length: 2, Beacon: []byte("beacon")}, func(v []float64, _ int, err error) {
			if err != nil {
				b.Error(err)
			}
			done <- v
		})
	})
	if err != nil {
		b.Fatal(err)
	}
	select {
	case v := <-done:
		b.StopTimer()
		if v == nil || math.Abs(v[0]-want) > float64(n)/(1<<24) {
			b.Fatalf("total %v, want %v", v, want)
		}
	case <-time.After(2 * time.Minute):
		b.Fatal("sum timed out")
	}
}

// Prepared connections are protected from the connection manager's
// trimming while a session needs them: two sessions prepared b, so b stays
// protected after the first Unprepare and is released after the second;
// a peer never prepared is not protected (the control), and an Unprepare of
// it changes nothing.
func TestPrepareProtectsUntilUnprepare(t *testing.T) {
	a, b, c := newHost(t, nil), newHost(t, nil), newHost(t, nil)
	a.AddAddrs(b.ID(), b.Addrs())
	protected := func(o *Host) bool {
		pid, _ := peer.Decode(string(o.ID()))
		return a.Host().ConnManager().IsProtected(pid, prepareTag)
	}
	a.Prepare(context.Background(), []protocol.PeerID{b.ID()})
	a.Prepare(context.Background(), []protocol.PeerID{b.ID()}) // a second session
	eventually(t, "the connection to b", func() bool { return connectedTo(a, b) })
	if !protected(b) || protected(c) {
		t.Fatalf("protected: b %v, c %v; want true, false", protected(b), protected(c))
	}
	a.Unprepare([]protocol.PeerID{b.ID(), c.ID()})
	if !protected(b) {
		t.Fatal("b unprotected while the second session still needs it")
	}
	a.Unprepare([]protocol.PeerID{b.ID()})
	if protected(b) {
		t.Fatal("b still protected after both sessions ended")
	}
	a.Unprepare([]protocol.PeerID{b.ID()}) // one too many: nothing happens
	if protected(b) || protected(c) {
		t.Fatal("protection after the sessions ended")
	}
}

// A message to a peer that is expected to dial (Expect) waits for that
// dial and goes on the peer's connection: the pair holds one connection,
// inbound here. A message on another protocol does not wait, and an
// expectation that lapses (the peer never dials) dials after the wait, so
// the message still arrives.
func TestExpectWaitsForThePeersDial(t *testing.T) {
	a := newHost(t, nil)
	var got inbox
	peers := make([]*Host, 3)
	for i := range peers {
		peers[i] = newHost(t, nil)
		peers[i].SetHandler(got.handle)
		a.AddAddrs(peers[i].ID(), peers[i].Addrs())
		peers[i].AddAddrs(a.ID(), a.Addrs())
	}
	b, c, d := peers[0], peers[1], peers[2]
	ctx := testCtx(t)
	conns := func(o *Host) []network.Conn {
		pid, _ := peer.Decode(string(o.ID()))
		return a.Host().Network().ConnsToPeer(pid)
	}

	// b dials a 300 ms after a's message to it is queued.
	a.Expect(context.Background(), wire.ProtoShamir, []protocol.PeerID{b.ID()})
	time.AfterFunc(300*time.Millisecond, func() { b.Prepare(context.Background(), []protocol.PeerID{a.ID()}) })
	if err := a.Send(ctx, b.ID(), wire.ProtoShamir, []byte("to b")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b's message", func() bool { return got.count() == 1 })
	if cs := conns(b); len(cs) != 1 || cs[0].Stat().Direction != network.DirInbound {
		t.Fatalf("a holds %d connections to b, want 1 that b dialled", len(cs))
	}
	if met, lapsed := a.ExpectStats(); met != 1 || lapsed != 0 {
		t.Fatalf("expect stats %d met, %d lapsed; want 1, 0", met, lapsed)
	}

	// Another protocol: no wait, a dials c at once.
	a.Expect(context.Background(), wire.ProtoShamir, []protocol.PeerID{c.ID()})
	if err := a.Send(ctx, c.ID(), wire.ProtoRing, []byte("to c")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "c's message", func() bool { return got.count() == 2 })
	if cs := conns(c); len(cs) != 1 || cs[0].Stat().Direction != network.DirOutbound {
		t.Fatalf("a holds %d connections to c, want 1 that a dialled", len(cs))
	}

	// d never dials: after the expectation (200 ms here) a dials it.
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	a.Expect(short, wire.ProtoShamir, []protocol.PeerID{d.ID()})
	start := time.Now()
	if err := a.Send(ctx, d.ID(), wire.ProtoShamir, []byte("to d")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "d's message", func() bool { return got.count() == 3 })
	if w := time.Since(start); w < 150*time.Millisecond {
		t.Errorf("d's message arrived %v after Send: it did not wait for d's dial", w)
	}
	if cs := conns(d); len(cs) != 1 || cs[0].Stat().Direction != network.DirOutbound {
		t.Fatalf("a holds %d connections to d, want 1 that a dialled", len(cs))
	}
	if met, lapsed := a.ExpectStats(); met != 1 || lapsed != 1 {
		t.Fatalf("expect stats %d met, %d lapsed; want 1, 1", met, lapsed)
	}
}

package node

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ppboost/ppboost/protocol"
)

var _ protocol.Preparer = (*Host)(nil)

// prepareConcurrency bounds the dials one Prepare runs at once: a TLS
// handshake costs about 1.7 ms of CPU (32 at once: about 55 ms), and an
// owner's sums must not wait behind a burst of them. A dial takes about 5
// one-way delays (handshake, identify), so an owner outside a committee of
// 32 has its prepared connections after one batch: with 8 at a time (four
// batches, about 20 delays) a 200-owner W&C session's first warm attempt
// still raced them, 7.6-9.2 delays against 5.2 for the later ones, in four
// runs on the simulated internet; with 32, 5.2 (issue 31).
const prepareConcurrency = 32

// prepareTag is the connection-manager tag of a prepared connection: the
// session's sums need it, so it is protected from trimming until the
// session ends (Unprepare), and trimmed after untagged ones.
const prepareTag = "ppboost-prepared"

var _ protocol.Unpreparer = (*Host)(nil)

// protectPrepared counts one more session that needs the connection to
// pid, and protects it from the connection manager's trimming.
func (x *Host) protectPrepared(pid peer.ID) {
	x.prepMu.Lock()
	defer x.prepMu.Unlock()
	if x.prepared == nil {
		x.prepared = map[peer.ID]int{}
	}
	x.prepared[pid]++
	x.h.ConnManager().Protect(pid, prepareTag)
	x.h.ConnManager().TagPeer(pid, prepareTag, 10)
}

// Unprepare ends what Prepare did for peers (protocol.Unpreparer): a
// session that asked for their connections has ended. A peer no session
// needs any more is unprotected and untagged: the connection manager may
// trim its connection again (it keeps it while below its low water mark).
func (x *Host) Unprepare(peers []protocol.PeerID) {
	x.prepMu.Lock()
	defer x.prepMu.Unlock()
	for _, p := range peers {
		pid, err := peer.Decode(string(p))
		if err != nil || x.prepared[pid] == 0 {
			continue
		}
		x.prepared[pid]--
		if x.prepared[pid] == 0 {
			delete(x.prepared, pid)
			x.h.ConnManager().Unprotect(pid, prepareTag)
			x.h.ConnManager().UntagPeer(pid, prepareTag)
		}
	}
}

// prepareStats counts what Prepare did (see PrepareStats).
type prepareStats struct{ dialled, failed, skipped atomic.Int64 }

func (x *Host) prepStats() *prepareStats { return &x.prep }

// Prepare opens connections to peers in the background (protocol.Preparer):
// the session calls it when the roster is fixed, with the peers its secure
// sums will send to, so that the first sum does not pay a dial, a security
// handshake and a muxer negotiation per peer on its critical path. It
// returns at once. At most prepareConcurrency dials run at a time, each
// within the host's DialTimeout, on goroutines Close waits for; peers
// already connected, the host itself and ids that do not parse are skipped.
// A failed dial is counted and logged at debug: the sum's own message will
// dial again and, if the peer stays unreachable, time out like a lost
// message. The dials stop when ctx ends or the host closes. Addresses come
// from the peerstore (AddAddrs with the roster's addresses).
func (x *Host) Prepare(ctx context.Context, peers []protocol.PeerID) { x.PrepareThen(ctx, peers, nil) }

var _ protocol.PrepareNotifier = (*Host)(nil)

// PrepareThen is Prepare, and then runs done (if not nil) once every dial
// it started has ended, connected or not, on a goroutine of its own: at
// once when there is nothing to dial, and also when the host is closed
// before the dials (protocol.PrepareNotifier).
func (x *Host) PrepareThen(ctx context.Context, peers []protocol.PeerID, done func()) {
	finish := func() {
		if done != nil {
			done()
		}
	}
	st := x.prepStats()
	var todo []peer.ID
	for _, p := range peers {
		pid, err := peer.Decode(string(p))
		if err != nil || pid == x.h.ID() {
			st.skipped.Add(1)
			continue
		}
		// Protected for the session, connected already or not.
		x.protectPrepared(pid)
		if x.h.Network().Connectedness(pid) == network.Connected {
			st.skipped.Add(1)
			continue
		}
		todo = append(todo, pid)
	}
	if len(todo) == 0 {
		if done != nil {
			go done()
		}
		return
	}
	started := x.goTracked(func() {
		defer finish()
		dctx, cancel := context.WithCancel(x.ctx)
		defer cancel()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < min(prepareConcurrency, len(todo)); w++ {
			wg.Add(1)
			if !x.goTracked(func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= len(todo) || dctx.Err() != nil {
						return
					}
					x.prepareOne(dctx, todo[i], st)
				}
			}) {
				wg.Done()
			}
		}
		wg.Wait()
		x.log.Debug("prepared connections", "peers", len(todo), "dialled", st.dialled.Load(), "failed", st.failed.Load())
	})
	if !started && done != nil {
		go done()
	}
}

func (x *Host) prepareOne(ctx context.Context, pid peer.ID, st *prepareStats) {
	if x.h.Network().Connectedness(pid) == network.Connected {
		st.skipped.Add(1)
		return
	}
	dctx, cancel := context.WithTimeout(ctx, x.cfg.DialTimeout)
	defer cancel()
	if err := x.h.Connect(dctx, peer.AddrInfo{ID: pid}); err != nil {
		st.failed.Add(1)
		x.log.Debug("preparing a connection failed", "peer", pid.String(), "err", err)
		return
	}
	st.dialled.Add(1)
}

// PrepareStats reports how many connections Prepare opened, how many dials
// failed, and how many peers it skipped (connected already, itself, bad id).
func (x *Host) PrepareStats() (dialled, failed, skipped int64) {
	st := x.prepStats()
	return st.dialled.Load(), st.failed.Load(), st.skipped.Load()
}

// ExpectStats reports how many stream opens waited for an expected peer's
// dial (Expect) and got its connection, and how many dialled after the
// wait lapsed.
func (x *Host) ExpectStats() (met, lapsed int64) {
	return x.out.expectMet.Load(), x.out.expectLapsed.Load()
}

// expectWait bounds how long a message waits for a connection that its
// peer is expected to open (Expect) before this node dials it too. The
// peer starts its dial when it learns the roster, about when this node
// does (a level of the roster tree later at most, about 5 one-way delays);
// a QUIC dial takes about two. On a path of 100 ms one way, 2 s covers
// both; a peer that never dials (crashed, or its dial failed) costs the
// first message to it at most this, once per expectation.
const expectWait = 2 * time.Second

var _ protocol.Expecter = (*Host)(nil)

// expectation is a peer expected to dial this node: messages on protos
// wait for its connection until until; done closes when it connects.
type expectation struct {
	protos map[string]bool
	until  time.Time
	done   chan struct{}
}

// Expect records that peers will dial this node (protocol.Expecter): for
// expectWait from now (or until ctx ends), a message on proto to one of
// them that finds no connection waits for the peer's dial instead of
// dialling it, so that the pair holds one connection (issue 31: both ends
// of a committee pair sent in a session's first sum, and 20 owners held 26
// duplicate connection ends). A peer connected already is skipped.
func (x *Host) Expect(ctx context.Context, proto string, peers []protocol.PeerID) {
	until := time.Now().Add(expectWait)
	if d, ok := ctx.Deadline(); ok && d.Before(until) {
		until = d
	}
	x.expMu.Lock()
	defer x.expMu.Unlock()
	if x.expect == nil {
		x.expect = map[peer.ID]*expectation{}
	}
	now := time.Now()
	for id, e := range x.expect {
		if now.After(e.until) {
			delete(x.expect, id) // bounded: what expired goes
		}
	}
	for _, p := range peers {
		pid, err := peer.Decode(string(p))
		if err != nil || pid == x.h.ID() || x.h.Network().Connectedness(pid) == network.Connected {
			continue
		}
		e := x.expect[pid]
		if e == nil {
			e = &expectation{protos: map[string]bool{}, done: make(chan struct{})}
			x.expect[pid] = e
		}
		e.protos[proto] = true
		if until.After(e.until) {
			e.until = until
		}
	}
}

// expectConnected is the network notifee that ends a peer's expectation
// when a connection to it opens (either side's).
func (x *Host) expectConnected(_ network.Network, c network.Conn) {
	x.expMu.Lock()
	defer x.expMu.Unlock()
	if e, ok := x.expect[c.RemotePeer()]; ok {
		close(e.done)
		delete(x.expect, c.RemotePeer())
	}
}

// awaitExpected waits, before a message on proto dials pid, for the
// connection pid is expected to open (Expect), until the expectation
// lapses or ctx ends; it returns at once when none is pending. What it
// waited for is counted (ExpectStats).
func (x *Host) awaitExpected(ctx context.Context, pid peer.ID, proto string) {
	x.expMu.Lock()
	e, ok := x.expect[pid]
	if !ok || !e.protos[proto] {
		x.expMu.Unlock()
		return
	}
	left := time.Until(e.until)
	done := e.done
	x.expMu.Unlock()
	if left <= 0 || x.h.Network().Connectedness(pid) == network.Connected {
		return
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-done:
		x.out.expectMet.Add(1)
	case <-t.C:
		x.out.expectLapsed.Add(1)
		x.log.Debug("an expected peer did not dial in time: dialling it", "peer", pid.String(), "protocol", proto)
	case <-ctx.Done():
	}
}

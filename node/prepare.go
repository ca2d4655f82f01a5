package node

import (
	"context"
	"sync"
	"sync/atomic"

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
func (x *Host) Prepare(ctx context.Context, peers []protocol.PeerID) {
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
		return
	}
	x.goTracked(func() {
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

package node

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/time/rate"

	"github.com/ppboost/ppboost/protocol/wire"
)

// InboundLimits bound what peers, admitted or not, can make a node hold or
// do on its direct streams. Anyone who can open a connection can open
// streams: without an allow-list that is anyone on the network.
//
// Memory: a frame's buffer grows only as its bytes arrive
// (wire.ReadFrameFunc), and every byte of buffer capacity held for an
// unfinished frame is charged to the peer (BytesPerPeer) and to the node
// (TotalBytes) until the frame is handed to the protocol. With at most
// StreamsPerPeer streams per peer, a node holds at most TotalBytes of
// frame buffers plus a few KiB of fixed cost per open stream, whatever the
// senders announce.
type InboundLimits struct {
	// StreamsPerPeer caps one peer's concurrent inbound direct streams; a
	// stream beyond it is reset. Honest senders keep one per direct
	// protocol (three), plus one being replaced.
	StreamsPerPeer int
	// BytesPerPeer caps the frame-buffer bytes held for one peer's
	// unfinished frames; at least wire.MaxControlBytes, so one full control
	// message always fits.
	BytesPerPeer int
	// TotalBytes caps the frame-buffer bytes held for all peers.
	TotalBytes int
	// MinRate is the average a frame must keep, in bytes per second, once
	// Grace has passed since its first byte arrived: a frame of which b
	// bytes have arrived is cut (its stream reset) at first byte + Grace +
	// b/MinRate unless more arrive. So a sender trickling a large frame is
	// cut off long before StreamTimeout would, while a stream idle between
	// frames is not (see Idle).
	MinRate int
	Grace   time.Duration
	// Idle is how long a stream may wait between frames before the node
	// resets it (before its first frame only Grace, if Grace > 0). Senders close their own streams after Idle/2 without
	// frames (Host.Send keeps one stream per peer and protocol open).
	Idle time.Duration
	// ControlRate and ControlBurst bound one peer's session-protocol
	// messages (Join, Refuse, RosterRequest, roster chunks): a token bucket
	// per peer; a message beyond it is dropped and its stream reset.
	ControlRate  float64
	ControlBurst int
}

// DefaultInboundLimits are generous for honest traffic (one long-lived
// stream per protocol per peer, frames written at once) and hold a node's inbound buffers
// to 32 MiB.
func DefaultInboundLimits() InboundLimits {
	return InboundLimits{
		StreamsPerPeer: 16,
		BytesPerPeer:   2 * wire.MaxControlBytes,
		TotalBytes:     32 << 20,
		MinRate:        4 << 10,
		Grace:          5 * time.Second,
		Idle:           2 * time.Minute,
		ControlRate:    20,
		ControlBurst:   200,
	}
}

func (l InboundLimits) validate(bad func(string, ...any)) {
	if l.StreamsPerPeer < 1 {
		bad("Inbound.StreamsPerPeer: %d, want >= 1", l.StreamsPerPeer)
	}
	if l.BytesPerPeer < wire.MaxControlBytes {
		bad("Inbound.BytesPerPeer: %d, want >= %d (one control message)", l.BytesPerPeer, wire.MaxControlBytes)
	}
	if l.TotalBytes < l.BytesPerPeer {
		bad("Inbound.TotalBytes: %d, want >= Inbound.BytesPerPeer (%d)", l.TotalBytes, l.BytesPerPeer)
	}
	if l.MinRate < 0 {
		bad("Inbound.MinRate: %d, want >= 0 (0: no rate floor)", l.MinRate)
	}
	if l.Grace < 0 {
		bad("Inbound.Grace: %v, want >= 0", l.Grace)
	}
	if l.Idle <= 0 {
		bad("Inbound.Idle: %v, want > 0", l.Idle)
	}
	if l.ControlRate <= 0 || l.ControlBurst < 1 {
		bad("Inbound.ControlRate %v, ControlBurst %d: want > 0 and >= 1", l.ControlRate, l.ControlBurst)
	}
}

// Inbound rejection errors, named in metrics by frameErrReason.
var (
	errTooManyStreams = errors.New("too many concurrent streams from this peer")
	errPeerBudget     = errors.New("peer's inbound byte budget exhausted")
	errTotalBudget    = errors.New("node's inbound byte budget exhausted")
	errTooSlow        = errors.New("stream below the minimum rate")
	errRateLimited    = errors.New("peer's control message rate exceeded")
)

// inbound accounts for what peers hold on a node: open streams and
// frame-buffer bytes per peer and in total, and the per-peer control
// message buckets. One per Host.
type inbound struct {
	lim InboundLimits
	m   *Metrics

	mu        sync.Mutex
	peers     map[peer.ID]*peerInbound
	total     int
	lastSweep time.Time
}

type peerInbound struct {
	streams int
	bytes   int
	control *rate.Limiter
	seen    time.Time // last stream opened: idle entries are swept
}

func newInbound(lim InboundLimits, m *Metrics) *inbound {
	return &inbound{lim: lim, m: m, peers: map[peer.ID]*peerInbound{}}
}

// idleAfter is how long a peer's entry (its control bucket) outlives its
// last stream. Longer than a full bucket takes to refill, so sweeping
// never hands a flooding peer a fresh burst.
func (in *inbound) idleAfter() time.Duration {
	return max(time.Minute, time.Duration(float64(in.lim.ControlBurst)/in.lim.ControlRate*float64(time.Second)))
}

// open admits one more stream from p, or reports errTooManyStreams.
func (in *inbound) open(p peer.ID, now time.Time) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	e := in.peers[p]
	if e == nil {
		if len(in.peers) >= sweepAt && now.Sub(in.lastSweep) > 10*time.Second {
			in.lastSweep = now
			in.sweepLocked(now)
		}
		e = &peerInbound{control: rate.NewLimiter(rate.Limit(in.lim.ControlRate), in.lim.ControlBurst)}
		in.peers[p] = e
	}
	e.seen = now
	if e.streams >= in.lim.StreamsPerPeer {
		return fmt.Errorf("%w (%d)", errTooManyStreams, e.streams)
	}
	e.streams++
	return nil
}

// sweepAt is the number of peer entries at which idle ones are dropped.
const sweepAt = 4096

func (in *inbound) sweepLocked(now time.Time) {
	for p, e := range in.peers {
		if e.streams == 0 && e.bytes == 0 && now.Sub(e.seen) > in.idleAfter() {
			delete(in.peers, p)
		}
	}
}

// close ends one of p's streams, releasing held bytes.
func (in *inbound) close(p peer.ID, held int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	e := in.peers[p]
	if e == nil {
		return
	}
	e.streams--
	in.releaseLocked(e, held)
}

// reserve charges n more buffer bytes to p and the node.
func (in *inbound) reserve(p peer.ID, n int) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	e := in.peers[p]
	switch {
	case e == nil:
		return errPeerBudget // no open stream: cannot happen
	case e.bytes+n > in.lim.BytesPerPeer:
		return fmt.Errorf("%w: %d held + %d > %d", errPeerBudget, e.bytes, n, in.lim.BytesPerPeer)
	case in.total+n > in.lim.TotalBytes:
		return fmt.Errorf("%w: %d held + %d > %d", errTotalBudget, in.total, n, in.lim.TotalBytes)
	}
	e.bytes += n
	in.total += n
	in.m.setInboundBytes(in.total)
	return nil
}

// release returns n bytes of p's (a frame handed on, or a stream ended).
func (in *inbound) release(p peer.ID, n int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if e := in.peers[p]; e != nil {
		in.releaseLocked(e, n)
	}
}

func (in *inbound) releaseLocked(e *peerInbound, n int) {
	e.bytes -= n
	in.total -= n
	in.m.setInboundBytes(in.total)
}

// allowControl takes a token from p's control bucket.
func (in *inbound) allowControl(p peer.ID, now time.Time) bool {
	in.mu.Lock()
	e := in.peers[p]
	in.mu.Unlock()
	return e != nil && e.control.AllowN(now, 1)
}

// openStreams counts the inbound direct streams being read (tests).
func (in *inbound) openStreams() (n int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, e := range in.peers {
		n += e.streams
	}
	return n
}

// held is the node's total of held buffer bytes (tests).
func (in *inbound) held() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.total
}

// deadline is when a frame whose first byte arrived at start, of which got
// bytes have arrived, must have received more: start + Grace +
// got/MinRate, never after the frame's own deadline.
func (l InboundLimits) deadline(start, streamEnd time.Time, got int) time.Time {
	if l.MinRate <= 0 {
		return streamEnd
	}
	d := start.Add(l.Grace + time.Duration(float64(got)/float64(l.MinRate)*float64(time.Second)))
	if d.After(streamEnd) {
		return streamEnd
	}
	return d
}

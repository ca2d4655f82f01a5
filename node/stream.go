package node

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// frameCap is the frame size cap of a direct protocol.
func frameCap(protoID string) (int, bool) { return wire.FrameCap(protoID) }

func (x *Host) dialContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(x.ctx, x.cfg.DialTimeout)
}

// Send delivers data to one peer as one varint-prefixed frame on the
// node's long-lived stream to that peer for protoID (outbound.go), opened
// on first use and kept until it has been idle for Inbound.Idle/2.
//
// A nil error means the frame is queued, in order behind this node's
// earlier frames to the same peer and protocol, on a stream that is open;
// it is written without waiting for the receiver, batched with frames
// queued back to back. It does not mean the peer received or handled it:
// a frame lost to a failed write is counted and logged, and the protocol
// above recovers with its timeouts, as on any best-effort transport. A
// Send that finds no open stream waits (within DialTimeout, or ctx) for
// one to open, so an unreachable peer, a peer without a handler for
// protoID, or one whose allow-list refuses this node fail that Send (if
// ctx ends first, the frame stays queued until the open succeeds or
// DialTimeout passes). A
// Send also waits (within ctx) while 4 MiB are already queued for the
// destination. Payloads over the protocol's cap (wire.MaxControlBytes for
// sessions, wire.MaxSumFrameBytes for sums) are refused with ErrTooLarge
// before anything is sent. A message to the node itself is delivered
// locally.
func (x *Host) Send(ctx context.Context, to protocol.PeerID, protoID string, data []byte) error {
	limit, ok := frameCap(protoID)
	if !ok {
		return fmt.Errorf("send to %s: %q: %w", to, protoID, ErrUnknownProtocol)
	}
	if len(data) > limit {
		return fmt.Errorf("send %s to %s: %d bytes exceed the %d-byte cap: %w", protoID, to, len(data), limit, ErrTooLarge)
	}
	pid, err := x.pids.decode(to)
	if err != nil {
		return fmt.Errorf("send %s: bad peer id %q: %w", protoID, to, err)
	}
	if x.isClosed() {
		return fmt.Errorf("send %s to %s: %w", protoID, to, ErrClosed)
	}
	if pid == x.h.ID() {
		msg := protocol.Message{From: to, Protocol: protoID, Data: bytes.Clone(data)}
		if !x.goTracked(func() { x.deliver(msg, protoID) }) {
			return fmt.Errorf("send %s to self: %w", protoID, ErrClosed)
		}
		x.m.MessageSent(protoID)
		return nil
	}
	if err := x.enqueue(ctx, outKey{peer: pid, proto: protoID}, newOutFrame(data)); err != nil {
		return fmt.Errorf("send %s to %s: %w", protoID, to, err)
	}
	return nil
}

// handleStream serves one long-lived inbound stream: it reads size-capped
// frames until the sender closes it (EOF) and delivers each as a message
// from the connection's authenticated peer, then closes. The receiver never
// writes on it and nothing is acknowledged (see Send).
//
// What one stream and one peer can cost is bounded (see InboundLimits): a
// peer with StreamsPerPeer streams open gets the next one reset; a stream
// must start its first frame within Grace, and between frames may sit idle
// for Inbound.Idle, after which it is reset
// (the sender closes its idle streams after Idle/2, so this only ends
// streams of peers that do not); a frame, from its first byte, must arrive
// at MinRate after Grace and within StreamTimeout, so a trickled frame is
// cut while an idle stream between frames is not; a frame's buffer grows
// only as its bytes arrive, charged to the peer's and the node's byte
// budgets until it is delivered. Anything else (an oversized or malformed
// length, a truncated frame) resets the stream. A session-protocol message
// over the peer's rate is dropped (the stream stays up). Every reset or
// drop is counted under its reason and logged at most once a minute per
// reason; nothing a peer sends can crash the node.
func (x *Host) handleStream(s network.Stream) {
	protoID := string(s.Protocol())
	remote := s.Conn().RemotePeer()
	limit, ok := frameCap(protoID)
	if !ok { // only directProtocols are registered
		s.Reset()
		return
	}
	if h := x.handler.Load(); h == nil || *h == nil {
		// Registered in New, served once SetHandler installed a handler.
		x.m.Rejected(protoID, "no handler")
		s.Reset()
		return
	}
	if err := x.in.open(remote, time.Now()); err != nil {
		x.rejectStream(remote, protoID, err, 0) // counted before the peer sees the reset
		s.Reset()
		return
	}
	held := 0 // buffer bytes charged to remote for the frame being read
	defer func() { x.in.close(remote, held) }()
	pr := &progressReader{s: s, lim: x.cfg.Inbound, timeout: x.cfg.StreamTimeout}
	r := bufio.NewReaderSize(pr, streamBufSize)
	from := protocol.PeerID(remote.String())
	reserve := func(n int) error {
		if err := x.in.reserve(remote, n); err != nil {
			return err
		}
		held += n
		return nil
	}
	for frames := 0; ; frames++ {
		// Between frames: wait up to Idle for the next frame's first byte.
		// Before the first frame only Grace: a sender writes its first
		// frame with the stream's opening, and a stream that never carries
		// a frame should not hold a slot for long.
		idle := x.cfg.Inbound.Idle
		if frames == 0 && x.cfg.Inbound.Grace > 0 {
			idle = min(idle, x.cfg.Inbound.Grace)
		}
		pr.waitIdle(time.Now().Add(idle))
		if _, err := r.Peek(1); err != nil {
			switch {
			case err == io.EOF: // the sender closed the stream
				s.Close()
			case pr.timedOut:
				x.log.Debug("closing an idle inbound stream", "from", remote.String(), "protocol", protoID,
					"idle", x.cfg.Inbound.Idle, "frames", frames)
				s.Reset()
			default: // reset by the sender between frames, or the connection ended
				s.Reset()
			}
			return
		}
		pr.beginFrame(time.Now(), r.Buffered())
		data, err := wire.ReadFrameFunc(r, limit, reserve)
		if err != nil {
			if pr.timedOut || !time.Now().Before(pr.end) {
				// (wire reports a deadline inside a varint as a bad prefix)
				err = pr.timeoutErr(err)
			}
			// Counted before the reset: a peer that sees its stream reset
			// finds the drop already in the metrics.
			x.rejectStream(remote, protoID, err, frames)
			s.Reset()
			return
		}
		if protoID == wire.ProtoSession && !x.in.allowControl(remote, time.Now()) {
			x.rejectFrame(remote, protoID, errRateLimited)
		} else {
			x.deliver(protocol.Message{From: from, Protocol: protoID, Data: data}, protoID)
		}
		x.in.release(remote, held)
		held = 0
	}
}

// streamBufSize is an inbound stream's read buffer: enough for a length
// prefix and small frames. Larger reads go straight into the frame buffer.
const streamBufSize = 1 << 10

// rejectStream counts a reset stream under its reason and logs it, at most
// once a minute per reason and protocol.
func (x *Host) rejectStream(remote peer.ID, protoID string, err error, frames int) {
	reason := frameErrReason(err)
	x.m.Rejected(protoID, reason)
	x.rlog.Log(hclog.Warn, "stream: "+protoID+": "+reason, "reset an inbound stream", "from", remote.String(),
		"protocol", protoID, "reason", reason, "frames", frames, "err", err)
}

// rejectFrame counts a dropped frame (the stream stays open) under its
// reason and logs it, at most once a minute per reason and protocol.
func (x *Host) rejectFrame(remote peer.ID, protoID string, err error) {
	reason := frameErrReason(err)
	x.m.Rejected(protoID, reason)
	x.rlog.Log(hclog.Warn, "frame: "+protoID+": "+reason, "dropped an inbound message", "from", remote.String(),
		"protocol", protoID, "reason", reason, "err", err)
}

// progressReader sets the stream's read deadline before every read. Between
// frames (waitIdle) that is the idle deadline. Within a frame (beginFrame)
// it is the earlier of the frame's end (StreamTimeout after its first byte)
// and the time by which InboundLimits.MinRate wants more bytes.
type progressReader struct {
	s          network.Stream
	lim        InboundLimits
	timeout    time.Duration
	idle       bool
	start, end time.Time
	got        int  // bytes received since the frame's first byte
	rateBound  bool // the last deadline set was the rate floor's
	timedOut   bool // the last read hit its deadline
}

func (r *progressReader) waitIdle(until time.Time) {
	r.idle, r.end, r.timedOut = true, until, false
}

// beginFrame starts a frame's clock at its first byte; buffered bytes
// (already read from the stream) count as received.
func (r *progressReader) beginFrame(now time.Time, buffered int) {
	r.idle, r.start, r.end, r.got, r.timedOut = false, now, now.Add(r.timeout), buffered, false
}

func (r *progressReader) Read(p []byte) (int, error) {
	d := r.end
	if !r.idle {
		d = r.lim.deadline(r.start, r.end, r.got)
	}
	r.rateBound = d.Before(r.end)
	if err := r.s.SetReadDeadline(d); err != nil {
		return 0, fmt.Errorf("set read deadline: %w", err)
	}
	n, err := r.s.Read(p)
	r.got += n
	r.timedOut = err != nil && (isTimeout(err) || errors.Is(err, os.ErrDeadlineExceeded))
	return n, err
}

// timeoutErr names a deadline hit within a frame: the rate floor's or the
// frame's.
func (r *progressReader) timeoutErr(err error) error {
	if r.rateBound && time.Now().Before(r.end) {
		return fmt.Errorf("%w: %d bytes in %v (floor %d B/s after %v): %v", errTooSlow, r.got,
			time.Since(r.start).Round(time.Millisecond), r.lim.MinRate, r.lim.Grace, err)
	}
	return fmt.Errorf("%w: frame unfinished %v after its first byte: %v", os.ErrDeadlineExceeded, time.Since(r.start).Round(time.Millisecond), err)
}

// frameErrReason names a stream read failure for metrics.
func frameErrReason(err error) string {
	switch {
	case errors.Is(err, errTooManyStreams):
		return "too many streams"
	case errors.Is(err, errPeerBudget):
		return "peer byte budget"
	case errors.Is(err, errTotalBudget):
		return "node byte budget"
	case errors.Is(err, errTooSlow):
		return "too slow"
	case errors.Is(err, errRateLimited):
		return "rate limited"
	case errors.Is(err, wire.ErrFrameTooLarge):
		return "oversize frame"
	case errors.Is(err, wire.ErrBadVarint):
		return "bad length prefix"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "truncated frame"
	case errors.Is(err, os.ErrDeadlineExceeded), isTimeout(err):
		return "timeout"
	case errors.Is(err, network.ErrReset):
		return "reset by peer"
	}
	return "stream error"
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

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
	libp2pproto "github.com/libp2p/go-libp2p/core/protocol"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// maxFramesPerStream bounds what one inbound stream may carry. Send writes
// one frame per stream; the slack allows batching by other implementations.
const maxFramesPerStream = 64

var errTooManyFrames = fmt.Errorf("more than %d frames on one stream", maxFramesPerStream)

// frameCap is the frame size cap of a direct protocol.
func frameCap(protoID string) (int, bool) {
	switch protoID {
	case wire.ProtoSession:
		return wire.MaxControlBytes, true
	case wire.ProtoRing, wire.ProtoShamir:
		return wire.MaxSumFrameBytes, true
	}
	return 0, false
}

func (x *Host) dialContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(x.ctx, x.cfg.DialTimeout)
}

// Send delivers data to one peer: it opens a new stream speaking protoID
// (within DialTimeout, dialling if needed), writes one varint-prefixed frame
// and half-closes, then waits for the peer to close its side, which it does
// after its handler has taken the frame. So a nil error means the peer's
// handler received the message, and a caller that sends to one peer from one
// goroutine (protocol.Outbox does) has its messages handled in order: with
// a bare Close, two streams sent back to back were handled by two goroutines
// on the receiver and could swap. The write and the wait share one
// StreamTimeout deadline (or ctx's, if earlier). Payloads over the
// protocol's cap (wire.MaxControlBytes for sessions, wire.MaxSumFrameBytes
// for sums) are refused with ErrTooLarge before anything is sent. A message
// to the node itself is delivered locally.
func (x *Host) Send(ctx context.Context, to protocol.PeerID, protoID string, data []byte) error {
	limit, ok := frameCap(protoID)
	if !ok {
		return fmt.Errorf("send to %s: %q: %w", to, protoID, ErrUnknownProtocol)
	}
	if len(data) > limit {
		return fmt.Errorf("send %s to %s: %d bytes exceed the %d-byte cap: %w", protoID, to, len(data), limit, ErrTooLarge)
	}
	pid, err := peer.Decode(string(to))
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
	var frame bytes.Buffer
	frame.Grow(len(data) + 10)
	if err := wire.WriteFrame(&frame, data, limit); err != nil {
		return fmt.Errorf("send %s to %s: %w", protoID, to, err)
	}
	dctx, cancel := context.WithTimeout(ctx, x.cfg.DialTimeout)
	// A relayed connection (circuit relay v2, see nat.go) is limited in
	// time and bytes; direct messages opt in to run over one when hole
	// punching has not given a direct connection.
	dctx = network.WithAllowLimitedConn(dctx, "ppboost direct message")
	s, err := x.h.NewStream(dctx, pid, libp2pproto.ID(protoID))
	cancel()
	if err != nil {
		x.logDialFailure(pid, protoID, err)
		return fmt.Errorf("send %s to %s: open stream: %w", protoID, to, err)
	}
	deadline := time.Now().Add(x.cfg.StreamTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	fail := func(what string, err error) error {
		s.Reset()
		return fmt.Errorf("send %s to %s: %s: %w", protoID, to, what, err)
	}
	if err := s.SetDeadline(deadline); err != nil {
		return fail("set deadline", err)
	}
	if _, err := s.Write(frame.Bytes()); err != nil {
		return fail("write", err)
	}
	if err := s.CloseWrite(); err != nil {
		return fail("close", err)
	}
	// The acknowledgement: the peer closes its side after handling the
	// frame, and resets the stream if it refused it.
	var b [1]byte
	if n, err := s.Read(b[:]); n > 0 || err != io.EOF {
		if err == nil || err == io.EOF {
			err = errors.New("unexpected data from the receiver")
		}
		return fail("waiting for the receiver", err)
	}
	s.Close()
	x.m.MessageSent(protoID)
	return nil
}

// handleStream reads size-capped frames until EOF and delivers each as a
// message from the connection's authenticated peer, then closes the stream:
// that close is the sender's acknowledgement (see Send). What one stream and
// one peer can cost is bounded (see InboundLimits): a peer with
// StreamsPerPeer streams open gets the next one reset; a frame's buffer
// grows only as its bytes arrive, charged to the peer's and the node's
// byte budgets until it is delivered; a stream must keep MinRate after
// Grace and finish within StreamTimeout; session-protocol messages are
// rate limited per peer. Anything else (an oversized or malformed length, a
// truncated frame, too many frames) resets the stream too. Every reset is
// counted under its reason and logged at most once a minute per reason;
// nothing a peer sends can crash the node.
func (x *Host) handleStream(s network.Stream) {
	protoID := string(s.Protocol())
	remote := s.Conn().RemotePeer()
	limit, ok := frameCap(protoID)
	if !ok { // only directProtocols are registered
		s.Reset()
		return
	}
	start := time.Now()
	if err := x.in.open(remote, start); err != nil {
		x.rejectStream(remote, protoID, err, 0) // counted before the peer sees the reset
		s.Reset()
		return
	}
	held := 0 // buffer bytes charged to remote for the frame being read
	defer func() { x.in.close(remote, held) }()
	pr := &progressReader{s: s, lim: x.cfg.Inbound, start: start, end: start.Add(x.cfg.StreamTimeout)}
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
		data, err := wire.ReadFrameFunc(r, limit, reserve)
		if err == io.EOF {
			s.Close()
			return
		}
		if err == nil && frames >= maxFramesPerStream {
			err = errTooManyFrames
		}
		if err == nil && protoID == wire.ProtoSession && !x.in.allowControl(remote, time.Now()) {
			err = errRateLimited
		}
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
		x.deliver(protocol.Message{From: from, Protocol: protoID, Data: data}, protoID)
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

// progressReader sets the stream's read deadline before every read: the
// earlier of the stream's end and the time by which InboundLimits.MinRate
// wants more bytes.
type progressReader struct {
	s          network.Stream
	lim        InboundLimits
	start, end time.Time
	got        int
	rateBound  bool // the last deadline set was the rate floor's
	timedOut   bool // the last read hit its deadline
}

func (r *progressReader) Read(p []byte) (int, error) {
	d := r.lim.deadline(r.start, r.end, r.got)
	r.rateBound = d.Before(r.end)
	if err := r.s.SetReadDeadline(d); err != nil {
		return 0, fmt.Errorf("set read deadline: %w", err)
	}
	n, err := r.s.Read(p)
	r.got += n
	r.timedOut = err != nil && (isTimeout(err) || errors.Is(err, os.ErrDeadlineExceeded))
	return n, err
}

// timeoutErr names a deadline hit: the rate floor's or the stream's.
func (r *progressReader) timeoutErr(err error) error {
	if r.rateBound && time.Now().Before(r.end) {
		return fmt.Errorf("%w: %d bytes in %v (floor %d B/s after %v): %v", errTooSlow, r.got,
			time.Since(r.start).Round(time.Millisecond), r.lim.MinRate, r.lim.Grace, err)
	}
	return fmt.Errorf("%w: stream open for %v: %v", os.ErrDeadlineExceeded, time.Since(r.start).Round(time.Millisecond), err)
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
	case errors.Is(err, errTooManyFrames):
		return "too many frames"
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

package node

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	libp2pproto "github.com/libp2p/go-libp2p/core/protocol"
)

// Long-lived outbound streams.
//
// A Host keeps at most one outbound stream per (peer, direct protocol) and
// writes every frame for that destination on it, in the order Send was
// called, from one writer goroutine. Frames queued while the writer is busy
// go out together in one write (one muxer frame, one TLS record, usually
// one TCP segment or QUIC packet). Nothing waits for the receiver: a frame
// costs one one-way delay, never a round trip.
//
// Send's contract (see Host.Send): nil means the frame is queued on a
// stream that is open. A Send that finds no open stream waits for the
// writer to open one (dial, handshake, identify), so an unreachable peer, a
// peer that refuses the protocol or the allow-list still fail the Send that
// found them. If the caller's ctx ends first, Send returns its error but the
// frame stays queued and is written if the stream opens within DialTimeout
// (as a message whose acknowledgement timed out used to arrive anyway). A
// frame whose write fails after Send returned (the receiver
// reset the stream, the connection died) is retried once on a fresh stream
// when the failed stream was not a fresh one; if that fails too, the frame
// is dropped and counted in ppboost_dropped_messages_total{role="wire"}.
// The protocol recovers lost messages with its own timeouts and retries, as
// it must on any transport (protocol.Transport: best effort).
//
// A stream idle for Inbound.Idle/2 is closed by its writer (the receiver
// closes streams idle for Inbound.Idle, so an honest sender always closes
// first and never writes into a stream the receiver is dropping). A reader
// goroutine per stream notices a receiver that closes or resets it, so the
// next Send opens a fresh one instead of writing into a dead stream.

// maxQueuedBytes bounds the frames queued for one destination; Send blocks
// (until ctx ends) while a destination's queue is over it. At least one
// frame of any size is always accepted into an empty queue.
const maxQueuedBytes = 4 << 20

// maxBatchBytes bounds one write: frames queued back to back are written
// together up to this size (a single larger frame is written alone).
const maxBatchBytes = 256 << 10

// maxKeptWriteBuf bounds the joined-batch buffer a destination keeps for
// its next write: the warm path's batches (shares, a few frames) reuse it,
// and a host writing large batches to 1,000 peers does not hold 256 KiB for
// each.
const maxKeptWriteBuf = 4 << 10

// outKey names one long-lived outbound stream.
type outKey struct {
	peer  peer.ID
	proto string
}

// outbound is a Host's set of outbound streams. The zero value is ready.
type outbound struct {
	mu      sync.Mutex
	streams map[outKey]*outStream

	writes, frames, opens atomic.Int64 // successful writes, frames in them, streams opened
	openFails             atomic.Int64
	// expectMet, expectLapsed: opens that waited for the peer's own dial
	// (Expect) and got it, or dialled after the wait lapsed.
	expectMet, expectLapsed atomic.Int64

	beforeWrite func() // tests: runs in the writer before each batch is written
}

// outFrame is one queued frame: a varint length prefix and its payload.
type outFrame struct {
	buf      []byte
	ready    chan error // non-nil when a Send waits for the stream to open
	answered bool       // ready has its value (guarded by outStream.mu)
	// small holds buf when the frame fits (a share, a SumStart): a warm
	// message is then one allocation at the sender.
	small [smallFrame]byte
}

// smallFrame is the largest frame an outFrame holds in itself.
const smallFrame = 128

// newOutFrame is data behind its length prefix (uvarint), copied: the
// caller may reuse data once Send returns.
func newOutFrame(data []byte) *outFrame {
	f := new(outFrame)
	var buf []byte
	if n := len(data) + binary.MaxVarintLen64; n <= smallFrame {
		buf = f.small[:0]
	} else {
		buf = make([]byte, 0, n)
	}
	buf = binary.AppendUvarint(buf, uint64(len(data)))
	f.buf = append(buf, data...)
	return f
}

// outStream is the queue and writer of one destination.
type outStream struct {
	x   *Host
	key outKey

	mu      sync.Mutex
	queue   []*outFrame
	queued  int           // bytes in queue
	open    bool          // a stream is open: Sends return once queued
	exited  bool          // the writer is gone; Sends must fetch a new outStream
	writing bool          // a batch taken from queue is being written
	space   chan struct{} // made by a Send over maxQueuedBytes, which waits for it; closed when the queue is taken (freeSpace)
	wake    chan struct{} // 1-buffered: frames were queued

	// Owned by the writer goroutine.
	s       network.Stream
	dead    chan struct{} // closed by s's reader when the receiver closed or reset s
	reading bool          // s's reader runs
	batch   []*outFrame   // the batch being written (reused: take)
	wbuf    []byte        // a batch of several frames, joined (reused: write)
}

// freeSpace wakes the Sends that wait for room in the queue (st.mu held).
func (st *outStream) freeSpace() {
	if st.space != nil {
		close(st.space)
		st.space = nil
	}
}

// sendIdle is how long an outbound stream stays open without frames.
func (x *Host) sendIdle() time.Duration { return x.cfg.Inbound.Idle / 2 }

// get returns the destination's outStream, starting its writer if needed.
func (o *outbound) get(x *Host, k outKey) (*outStream, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if st := o.streams[k]; st != nil {
		return st, nil
	}
	if o.streams == nil {
		o.streams = map[outKey]*outStream{}
	}
	st := &outStream{x: x, key: k, wake: make(chan struct{}, 1)}
	if !x.goTracked(st.run) {
		return nil, ErrClosed
	}
	o.streams[k] = st
	return st, nil
}

// count is the number of destinations with a writer (tests).
func (o *outbound) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.streams)
}

// enqueue queues frame for k and returns once it is queued on an open
// stream (see the contract above), or with the reason it cannot be.
func (x *Host) enqueue(ctx context.Context, k outKey, f *outFrame) error {
	frame := f.buf
	for {
		st, err := x.out.get(x, k)
		if err != nil {
			return err
		}
		st.mu.Lock()
		for !st.exited && st.queued > 0 && st.queued+len(frame) > maxQueuedBytes {
			if st.space == nil {
				st.space = make(chan struct{})
			}
			space := st.space
			st.mu.Unlock()
			select {
			case <-space:
			case <-ctx.Done():
				return fmt.Errorf("queue full (%d bytes): %w", maxQueuedBytes, context.Cause(ctx))
			case <-x.ctx.Done():
				return x.stopped()
			}
			st.mu.Lock()
		}
		if st.exited {
			st.mu.Unlock()
			continue
		}
		if !st.open {
			f.ready = make(chan error, 1)
		}
		st.queue = append(st.queue, f)
		st.queued += len(frame)
		st.mu.Unlock()
		select {
		case st.wake <- struct{}{}:
		default:
		}
		if f.ready == nil {
			return nil
		}
		select {
		case err := <-f.ready:
			return err
		case <-ctx.Done():
			// The frame stays queued: if the stream opens within
			// DialTimeout it is still written (as a frame whose
			// acknowledgement timed out used to arrive anyway). Dropping
			// it here lost the first sum's shares whenever handshakes
			// under load took about as long as the caller's timeout.
			st.mu.Lock()
			defer st.mu.Unlock()
			if f.answered {
				return <-f.ready
			}
			return fmt.Errorf("stream not open yet (the frame stays queued until DialTimeout): %w", context.Cause(ctx))
		}
	}
}

// answerLocked gives a waiting Send its result.
func (f *outFrame) answerLocked(err error) {
	if f.ready != nil && !f.answered {
		f.answered = true
		f.ready <- err
	}
}

// run is the destination's writer: it opens the stream when frames are
// queued, writes them in order in batches, and exits after sendIdle
// without frames.
func (st *outStream) run() {
	x := st.x
	idle := time.NewTimer(x.sendIdle())
	defer idle.Stop()
	for {
		st.mu.Lock()
		pending := len(st.queue)
		st.mu.Unlock()
		if pending == 0 {
			select {
			case <-st.wake:
			case <-st.deadCh():
				st.drop(nil)
			case <-idle.C:
				if st.retire() {
					return
				}
				idle.Reset(x.sendIdle())
			case <-x.ctx.Done():
				st.shutdown()
				return
			}
			continue
		}
		if x.ctx.Err() != nil {
			st.shutdown()
			return
		}
		if st.isDead() || st.onRelayedBesideDirect() {
			st.drop(nil)
		}
		fresh := false
		if st.s == nil {
			if err := st.openStream(); err != nil {
				st.failQueued(err)
				continue
			}
			fresh = true
		}
		batch := st.take()
		if len(batch) == 0 {
			continue
		}
		if hook := x.out.beforeWrite; hook != nil {
			hook()
		}
		err := st.write(batch)
		if err != nil && !fresh && x.ctx.Err() == nil {
			// The stream had been idle or the receiver dropped it: one
			// more try on a fresh stream. The receiver discards a frame cut
			// by a reset, so a retried frame arrives at most twice (if the
			// failed write reached the receiver's handler), which the
			// protocol tolerates.
			st.drop(err)
			if err = st.openStream(); err == nil {
				err = st.write(batch)
			}
		}
		st.doneWriting()
		if err != nil {
			st.drop(err)
			x.m.Dropped("wire", "write failed")
			x.rlog.Log(hclog.Warn, "send: "+st.key.proto, "dropped queued direct messages after a failed write",
				"to", st.key.peer.String(), "protocol", st.key.proto, "frames", len(batch), "err", err)
			continue
		}
		if !st.reading {
			st.startReader()
		}
		x.out.writes.Add(1)
		x.out.frames.Add(int64(len(batch)))
		for range batch {
			x.m.MessageSent(st.key.proto)
		}
		if !idle.Stop() {
			select {
			case <-idle.C:
			default:
			}
		}
		idle.Reset(x.sendIdle())
	}
}

// onRelayedBesideDirect reports whether the current stream runs over a
// relayed connection while a direct one to the peer is open (hole punching
// succeeded, or the peer dialled in directly after a dial of ours fell back
// to the relay): the stream is then closed before the next frames (what was
// written on it is delivered) and they go on a new stream, which libp2p
// opens on the direct connection. Without it the long-lived stream kept
// the relayed connection busy, so closeRelayed never closed it and the pair
// held two connections for the session: 54 duplicate ends among 1,000
// owners of the federated Newton session on the simulated internet, every
// one a relayed connection opened when a direct dial to a busy committee
// member took longer than NAT.RelayDelay, and its hole-punched direct twin
// 0.6-0.9 s later (issue 31).
func (st *outStream) onRelayedBesideDirect() bool {
	if st.s == nil || !st.s.Conn().Stat().Limited {
		return false
	}
	_, direct := connKinds(st.x.h.Network(), st.key.peer)
	return direct
}

// deadCh is the current stream's dead channel, or nil (never ready).
func (st *outStream) deadCh() <-chan struct{} {
	if st.s == nil {
		return nil
	}
	return st.dead
}

func (st *outStream) isDead() bool {
	select {
	case <-st.deadCh():
		return true
	default:
		return false
	}
}

// openStream opens the stream (dialling if needed, within DialTimeout) and
// starts its reader; waiting Sends learn that their frames are queued on an
// open stream.
func (st *outStream) openStream() error {
	x := st.x
	ctx, cancel := context.WithTimeout(x.ctx, x.cfg.DialTimeout)
	// A relayed connection (circuit relay v2, see nat.go) is limited in
	// time and bytes; direct messages opt in to run over one when hole
	// punching has not given a direct connection.
	ctx = network.WithAllowLimitedConn(ctx, "ppboost direct message")
	if x.h.Network().Connectedness(st.key.peer) != network.Connected {
		// The peer may be opening this pair's connection (Expect).
		x.awaitExpected(ctx, st.key.peer, st.key.proto)
	}
	s, err := x.h.NewStream(ctx, st.key.peer, libp2pproto.ID(st.key.proto))
	cancel()
	if err != nil {
		x.out.openFails.Add(1)
		x.logDialFailure(st.key.peer, st.key.proto, err)
		return fmt.Errorf("open stream: %w", err)
	}
	// s's reader starts after the first write (startReader): a Read
	// before it would send the protocol negotiation alone, and the
	// receiver would wait for the first frame separately.
	st.s, st.dead, st.reading = s, make(chan struct{}), false
	x.out.opens.Add(1)
	st.mu.Lock()
	st.open = true
	for _, f := range st.queue {
		f.answerLocked(nil)
	}
	st.mu.Unlock()
	return nil
}

// startReader starts the current stream's reader. It runs even when the
// host is closing: Close flushes what Send queued, so the writer may write
// a first batch after Close began, and shutdown then waits on this reader
// to learn that the receiver read everything. (Without it, dead looked
// closed at once and the writer reset the stream it had just written.)
func (st *outStream) startReader() {
	s, dead := st.s, st.dead
	st.reading = true
	st.x.goChild(func() { readUntilClosed(s, dead) })
}

// readUntilClosed reads s until the receiver closes or resets it (or this
// side closes it), then closes dead. The receiver never writes on a direct
// stream: data from it is a protocol violation and resets the stream. (With
// lazy protocol negotiation the first Read also consumes the receiver's
// multistream confirmation; a refusal surfaces here as an error.)
func readUntilClosed(s network.Stream, dead chan struct{}) {
	defer close(dead)
	var b [64]byte
	for {
		n, err := s.Read(b[:])
		if n > 0 {
			s.Reset()
			return
		}
		if err != nil {
			return
		}
	}
}

// take removes the batch to write next from the queue: frames in order, up
// to maxBatchBytes (at least one).
func (st *outStream) take() []*outFrame {
	st.mu.Lock()
	defer st.mu.Unlock()
	// The writer owns the last batch until it takes the next: reused, as
	// the queue's array is (its slots cleared), so a warm stream takes and
	// writes without allocating.
	clear(st.batch)
	batch := st.batch[:0]
	size, i := 0, 0
	for ; i < len(st.queue); i++ {
		f := st.queue[i]
		if len(batch) > 0 && size+len(f.buf) > maxBatchBytes {
			break
		}
		batch = append(batch, f)
		size += len(f.buf)
		st.queued -= len(f.buf)
	}
	n := copy(st.queue, st.queue[i:])
	clear(st.queue[n:])
	st.queue = st.queue[:n]
	st.writing = len(batch) > 0
	st.freeSpace()
	st.batch = batch
	return batch
}

// write writes batch in one Write within StreamTimeout.
func (st *outStream) write(batch []*outFrame) error {
	x := st.x
	var buf []byte
	if len(batch) == 1 {
		buf = batch[0].buf
	} else {
		n := 0
		for _, f := range batch {
			n += len(f.buf)
		}
		buf = slices.Grow(st.wbuf[:0], n)
		for _, f := range batch {
			buf = append(buf, f.buf...)
		}
		if cap(buf) <= maxKeptWriteBuf {
			st.wbuf = buf
		}
	}
	if err := st.s.SetWriteDeadline(time.Now().Add(x.cfg.StreamTimeout)); err != nil {
		return fmt.Errorf("set write deadline: %w", err)
	}
	if _, err := st.s.Write(buf); err != nil {
		return fmt.Errorf("write %d frames (%d bytes): %w", len(batch), len(buf), err)
	}
	return nil
}

// drop forgets the current stream: reset after a failure (err != nil),
// closed when the receiver ended it. Later Sends wait for a new one.
func (st *outStream) drop(err error) {
	if st.s == nil {
		return
	}
	if err != nil || st.isDead() {
		st.s.Reset()
	} else {
		st.s.Close()
	}
	st.s, st.dead = nil, nil
	st.mu.Lock()
	st.open = false
	st.mu.Unlock()
}

// failQueued answers every queued frame with err (the stream could not be
// opened) and empties the queue. Frames queued while a stream was open
// (their Sends already returned) are counted as dropped.
func (st *outStream) failQueued(err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	lost := 0
	for _, f := range st.queue {
		if f.ready == nil || f.answered { // its Send returned nil
			lost++
		}
		f.answerLocked(err)
	}
	st.queue, st.queued = nil, 0
	st.open = false
	st.freeSpace()
	if lost > 0 {
		for range lost {
			st.x.m.Dropped("wire", "write failed")
		}
		st.x.rlog.Log(hclog.Warn, "send: "+st.key.proto, "dropped queued direct messages after a failed write",
			"to", st.key.peer.String(), "protocol", st.key.proto, "frames", lost, "err", err)
	}
}

// retire closes an idle stream and, if nothing is queued, removes the
// destination so the writer can exit. It reports whether it did.
func (st *outStream) retire() bool {
	st.drop(nil)
	o := &st.x.out
	o.mu.Lock()
	defer o.mu.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.queue) > 0 {
		return false
	}
	st.exited = true
	delete(o.streams, st.key)
	st.freeSpace()
	return true
}

// doneWriting marks the batch taken by take as written (or dropped).
func (st *outStream) doneWriting() {
	st.mu.Lock()
	st.writing = false
	st.mu.Unlock()
}

// busy reports whether frames are queued or being written.
func (st *outStream) busy() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.queue) > 0 || st.writing
}

// closeFlush bounds how long Close waits for queued frames to be written,
// and closeGrace how long a writer then waits for the receiver to confirm
// it read everything (its side closed after our half-close).
const (
	closeFlush = 5 * time.Second
	closeGrace = 2 * time.Second
)

// flush waits until no destination has frames queued or being written, or
// until timeout: Send returns once a frame is queued, so a node that sends
// a last message and closes (an owner's Refuse before it exits) must not
// drop it.
func (o *outbound) flush(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		o.mu.Lock()
		busy := false
		for _, st := range o.streams {
			if st.busy() {
				busy = true
				break
			}
		}
		o.mu.Unlock()
		if !busy || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitWriters waits until every writer has shut down (removed itself), or
// until timeout, so the streams' last bytes leave before the host closes
// its connections.
func (o *outbound) waitWriters(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		o.mu.Lock()
		n := len(o.streams)
		o.mu.Unlock()
		if n == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// shutdown ends the writer when the host closes: a stream whose frames were
// all written is half-closed and the writer waits (closeGrace at most) for
// the receiver to close its side, which it does after reading everything;
// queued frames fail.
func (st *outStream) shutdown() {
	if st.s != nil {
		if st.reading && !st.busy() {
			if err := st.s.CloseWrite(); err == nil {
				select {
				case <-st.dead:
				case <-time.After(closeGrace):
				}
			}
		}
		st.s.Reset()
		st.s, st.dead = nil, nil
	}
	err := st.x.stopped()
	o := &st.x.out
	o.mu.Lock()
	delete(o.streams, st.key)
	o.mu.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.exited = true
	for _, f := range st.queue {
		f.answerLocked(err)
	}
	st.queue, st.queued = nil, 0
	st.freeSpace()
}

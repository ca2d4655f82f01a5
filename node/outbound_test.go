package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// frameOf is data with its varint length prefix.
func frameOf(data string) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(data))), data...)
}

// TestIdleLongLivedStreamSurvives: a stream idle between frames for longer
// than Grace and StreamTimeout is not cut (the rate floor and the frame
// deadline start at a frame's first byte), while a frame trickled on the
// same stream is, as "too slow"; a stream idle for Inbound.Idle is reset
// without being counted as an attack.
func TestIdleLongLivedStreamSurvives(t *testing.T) {
	lim := DefaultInboundLimits()
	lim.Grace, lim.MinRate, lim.Idle = 300*time.Millisecond, 1<<10, 3*time.Second
	victim := newHost(t, func(c *Config) { c.Inbound = lim; c.StreamTimeout = time.Second })
	var got inbox
	victim.SetHandler(got.handle)
	rejected := func(reason string) float64 {
		return metricValue(t, victim.cfg.Metrics, "ppboost_rejected_messages_total", "topic", wire.ProtoShamir, "reason", reason)
	}

	s := rawStream(t, victim, wire.ProtoShamir)
	if _, err := s.Write(frameOf("first")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first frame", func() bool { return got.count() == 1 })
	// Idle past Grace + StreamTimeout (1.3 s): under the old per-stream
	// clock this stream would have been reset by now.
	time.Sleep(1500 * time.Millisecond)
	if _, err := s.Write(frameOf("second")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a frame after the idle pause", func() bool { return got.count() == 2 })
	if m := got.all()[1]; string(m.Data) != "second" {
		t.Fatalf("second frame %q", m.Data)
	}

	// Now trickle a frame on the same stream: 60 KiB announced, 10 B per
	// 100 ms (100 B/s, a tenth of the floor). The floor cuts it once
	// Grace + got/MinRate has passed since its first byte: about 0.3 s +
	// (a few hundred bytes)/1 KiB/s < StreamTimeout, so "too slow" and not
	// "timeout".
	if _, err := s.Write(binary.AppendUvarint(nil, 60<<10)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		if _, err := s.Write(make([]byte, 10)); err != nil {
			break // reset
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("a trickled frame on a long-lived stream was not cut within 10 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	expectReset(t, s)
	eventually(t, "the trickle counted as too slow", func() bool { return rejected("too slow") == 1 })
	if got.count() != 2 {
		t.Fatalf("%d messages delivered, want the 2 whole frames", got.count())
	}

	// A stream idle for lim.Idle is reset, and it is not an attack.
	s2 := rawStream(t, victim, wire.ProtoShamir)
	if _, err := s2.Write(frameOf("third")); err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	expectReset(t, s2)
	if d := time.Since(opened); d < lim.Idle-200*time.Millisecond {
		t.Fatalf("idle stream reset after %v, want about Idle = %v", d, lim.Idle)
	}
	if got.count() != 3 {
		t.Fatalf("%d messages delivered, want 3", got.count())
	}
	for _, reason := range []string{"timeout", "too slow", "stream error"} {
		want := 0.0
		if reason == "too slow" {
			want = 1
		}
		if v := rejected(reason); v != want {
			t.Fatalf("rejected{%s} = %v after an idle close, want %v", reason, v, want)
		}
	}
}

// TestSendDoesNotWaitForTheHandler: Send returns once its frame is queued
// on an open stream, not after the receiver handled it (the old
// acknowledgement cost a round trip per message and blocked a sender
// behind a slow handler until StreamTimeout). Messages still arrive in
// order once the handler runs.
func TestSendDoesNotWaitForTheHandler(t *testing.T) {
	a, b := newHost(t, nil), newHost(t, func(c *Config) { c.StreamTimeout = 2 * time.Second })
	connect(t, a, b)
	release := make(chan struct{})
	var got inbox
	b.SetHandler(func(m protocol.Message) {
		<-release
		got.handle(m)
	})
	ctx := testCtx(t)
	const n = 50
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := a.Send(ctx, b.ID(), wire.ProtoShamir, []byte(fmt.Sprint(i))); err != nil {
			t.Fatalf("send %d while the handler is blocked: %v", i, err)
		}
	}
	if d := time.Since(start); d > time.Second {
		// Generous: 50 queued frames take microseconds; waiting for the
		// blocked handler would take StreamTimeout (2 s) on the first.
		t.Fatalf("%d sends took %v with the receiver's handler blocked", n, d)
	}
	if got.count() != 0 {
		t.Fatal("handler ran before release")
	}
	close(release)
	eventually(t, "every message", func() bool { return got.count() == n })
	for i, m := range got.all() {
		if string(m.Data) != fmt.Sprint(i) {
			t.Fatalf("message %d is %q: out of order", i, m.Data)
		}
	}
	if o := a.out.opens.Load(); o != 1 {
		t.Fatalf("%d streams opened for %d messages to one peer, want 1", o, n)
	}
}

// TestQueuedFramesAreBatched: frames queued while the writer is blocked
// (the receiver stopped reading, so the muxer's window is full) go out
// together in one write when it unblocks.
func TestQueuedFramesAreBatched(t *testing.T) {
	a, b := newHost(t, nil), newHost(t, func(c *Config) { c.StreamTimeout = 20 * time.Second })
	connect(t, a, b)
	release := make(chan struct{})
	var got inbox
	b.SetHandler(func(m protocol.Message) {
		<-release
		got.handle(m)
	})
	ctx := testCtx(t)
	// Fill the stream: the handler holds the first frame, the muxer's
	// receive window (256 KiB at first) fills behind it, and the writer
	// blocks in Write.
	big := make([]byte, wire.MaxSumFrameBytes)
	const bigs = 16 // 1 MiB: four times the window
	for i := 0; i < bigs; i++ {
		if err := a.Send(ctx, b.ID(), wire.ProtoShamir, big); err != nil {
			t.Fatal(err)
		}
	}
	// The writer is blocked once its write count stops moving short of
	// the 16 frames.
	last := int64(-1)
	eventually(t, "the writer to block", func() bool {
		w := a.out.writes.Load()
		stable := w == last
		last = w
		time.Sleep(100 * time.Millisecond)
		return stable && a.out.frames.Load() < bigs
	})
	writesBefore := a.out.writes.Load()
	const small = 100
	for i := 0; i < small; i++ {
		if err := a.Send(ctx, b.ID(), wire.ProtoShamir, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	queued := 0
	a.out.mu.Lock()
	for _, st := range a.out.streams {
		st.mu.Lock()
		queued += st.queued
		st.mu.Unlock()
	}
	a.out.mu.Unlock()
	close(release)
	eventually(t, "every frame", func() bool { return got.count() == bigs+small })
	// Writes after the release: the blocked one, then the queue in
	// batches of at most maxBatchBytes (one more for a batch boundary).
	// One write per frame would be more than 100.
	maxWrites := int64(1 + (queued+maxBatchBytes-1)/maxBatchBytes + 1)
	w := a.out.writes.Load() - writesBefore
	t.Logf("%d bytes queued behind a blocked write (%d small frames among them): %d writes", queued, small, w)
	if w > maxWrites {
		t.Fatalf("%d writes for %d queued bytes, want at most %d", w, queued, maxWrites)
	}
	for i, m := range got.all()[bigs:] {
		if string(m.Data) != fmt.Sprint(i) {
			t.Fatalf("small frame %d is %q: out of order", i, m.Data)
		}
	}
}

// TestSendReopensAfterReceiverReset: when the receiver resets a long-lived
// stream (here: its idle timeout is shorter than the sender's), the
// sender notices and the next Send goes out on a fresh stream.
func TestSendReopensAfterReceiverReset(t *testing.T) {
	lim := DefaultInboundLimits()
	lim.Idle = 500 * time.Millisecond
	a, b := newHost(t, nil), newHost(t, func(c *Config) { c.Inbound = lim })
	connect(t, a, b)
	var got inbox
	b.SetHandler(got.handle)
	ctx := testCtx(t)
	if err := a.Send(ctx, b.ID(), wire.ProtoRing, []byte("one")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first message", func() bool { return got.count() == 1 })
	eventually(t, "the receiver to reset the idle stream", func() bool { return b.in.openStreams() == 0 })
	time.Sleep(50 * time.Millisecond) // the reset reaches the sender's reader
	if err := a.Send(ctx, b.ID(), wire.ProtoRing, []byte("two")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the message after the reset", func() bool { return got.count() == 2 })
	if o := a.out.opens.Load(); o != 2 {
		t.Fatalf("%d streams opened, want 2 (one reopened after the reset)", o)
	}
}

// TestSendErrorsReachTheCaller: what stops a stream from opening still
// fails the Send that found it.
func TestSendErrorsReachTheCaller(t *testing.T) {
	a, b := newHost(t, nil), newHost(t, nil)
	// A peer a knows no address of: the dial fails.
	c := newHost(t, nil)
	if err := a.Send(testCtx(t), c.ID(), wire.ProtoRing, []byte("x")); err == nil {
		t.Fatal("a Send to a peer without an address succeeded")
	}
	connect(t, a, b)
	// b is gone.
	var got inbox
	b.SetHandler(got.handle)
	if err := a.Send(testCtx(t), b.ID(), wire.ProtoRing, []byte("x")); err != nil {
		t.Fatal(err)
	}
	b.Close()
	eventually(t, "the connection to close", func() bool {
		return a.Host().Network().Connectedness(b.Host().ID()) != network.Connected
	})
	// Once a has seen the connection end, its stream is dead and the
	// next Send must redial, which fails. (Until then a Send may still
	// be queued on the old stream: Send does not wait for the receiver.)
	eventually(t, "a Send to a closed host to fail", func() bool {
		return a.Send(testCtx(t), b.ID(), wire.ProtoRing, []byte("y")) != nil
	})
	// Writers end with the host.
	a.Close()
	if n := a.out.count(); n != 0 {
		t.Fatalf("%d writers left after Close", n)
	}
}

// TestWriteAfterCloseDelivers plays the order CPU load produced in CI
// (0 of 20 frames arrived): Send returns once the stream is open, the test
// closes the host, and only then does the writer write the batch. The
// stream's reader must still start (Close waits for it), or the writer
// takes the stream for dead and resets what it just wrote.
func TestWriteAfterCloseDelivers(t *testing.T) {
	a, b := newHost(t, nil), newHost(t, nil)
	var box inbox
	b.SetHandler(box.handle)
	connect(t, a, b)
	a.out.beforeWrite = func() {
		for deadline := time.Now().Add(5 * time.Second); !a.isClosed() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	const n = 20
	for i := range n {
		if err := a.Send(context.Background(), b.ID(), wire.ProtoSession, []byte(fmt.Sprintf("last %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	eventually(t, "all 20 frames written after Close began", func() bool { return box.count() == n })
}

// TestSendThenCloseDelivers: Send returns once a frame is queued, so a node
// that sends a last message and closes at once (an owner's Refuse before it
// exits 4) relies on Close writing the queued frames and half-closing the
// stream before the connections go. Ten rounds, each with a fresh pair and
// a burst of frames sent right before Close; every frame must arrive.
func TestSendThenCloseDelivers(t *testing.T) {
	for round := range 10 {
		a, b := newHost(t, nil), newHost(t, nil)
		var box inbox
		b.SetHandler(box.handle)
		connect(t, a, b)
		const n = 20
		for i := range n {
			if err := a.Send(context.Background(), b.ID(), wire.ProtoSession, []byte(fmt.Sprintf("last %d %d", round, i))); err != nil {
				t.Fatal(err)
			}
		}
		a.Close()
		deadline := time.Now().Add(10 * time.Second)
		for box.count() < n && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if box.count() != n {
			t.Fatalf("round %d: %d of %d frames arrived; sender writes %d frames %d opens %d openFails %d", round, box.count(), n,
				a.out.writes.Load(), a.out.frames.Load(), a.out.opens.Load(), a.out.openFails.Load())
		}
		b.Close()
	}
}

// A warm message allocates at the sender only its queued frame, one
// allocation holding a small frame and its bookkeeping; the destination's
// libp2p id is decoded once (issue 31: the warm path allocates nothing per
// share that it can reuse; BenchmarkMessageCPU measures the whole path:
// 2 allocations a pipelined message, the receiver's frame included, was 9).
// Negative control: a frame above smallFrame bytes takes a second one.
func TestWarmSendAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	var c peerIDs
	id := newHost(t, nil).ID()
	if _, err := c.decode(id); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = c.decode(id) }); n != 0 {
		t.Errorf("decoding a cached peer id: %v allocations, want 0", n)
	}
	share := make([]byte, 80)
	if n := testing.AllocsPerRun(100, func() { _ = newOutFrame(share) }); n != 1 {
		t.Errorf("a %d-byte frame: %v allocations, want 1", len(share), n)
	}
	big := make([]byte, smallFrame)
	if n := testing.AllocsPerRun(100, func() { _ = newOutFrame(big) }); n != 2 {
		t.Errorf("control: a %d-byte frame: %v allocations, want 2", len(big), n)
	}
	f := newOutFrame(share)
	if v, k := binary.Uvarint(f.buf); v != uint64(len(share)) || !bytes.Equal(f.buf[k:], share) {
		t.Errorf("frame %x: want the length %d then the data", f.buf, len(share))
	}
}

package netem

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// slack is what the Go timer and the scheduler may add to an emulated
// delay on a loaded 2-core machine. Emulated delays are never early
// (timers do not fire early), so lower bounds are exact and only upper
// bounds carry it.
const slack = 15 * time.Millisecond

// TestDelayDistribution checks the sampler itself: Delay plus a uniform
// jitter on [-J, J] has mean Delay and variance (2J)^2/12.
func TestDelayDistribution(t *testing.T) {
	l := Link{Delay: 50 * time.Millisecond, Jitter: 20 * time.Millisecond}
	r := rand.New(rand.NewPCG(1, 2))
	const n = 20000
	var sum, sq float64
	for range n {
		d := float64(l.delay(r)) / float64(time.Millisecond)
		if d < 30 || d > 70 {
			t.Fatalf("delay %v ms outside [30, 70]", d)
		}
		sum += d
		sq += d * d
	}
	mean := sum / n
	variance := sq/n - mean*mean
	// sd of one draw: 40/sqrt(12) = 11.55 ms; the mean's standard error over
	// 20,000 draws is 0.082 ms: 5 standard errors is 0.41 ms.
	if math.Abs(mean-50) > 0.41 {
		t.Errorf("mean delay %.3f ms, want 50 +- 0.41", mean)
	}
	// Variance 133.3 ms^2; the sample variance of a uniform has relative
	// standard error sqrt((9/5 - 1)/n) = 0.0063: 5 of them is 3.2 %.
	if math.Abs(variance/133.33-1) > 0.032 {
		t.Errorf("delay variance %.1f ms^2, want 133.3 +- 3.2 %%", variance)
	}
	// Negative control: no jitter, no spread.
	l.Jitter = 0
	if d := l.delay(r); d != l.Delay {
		t.Errorf("jitter 0: delay %v, want %v", d, l.Delay)
	}
}

// pipe returns a connection dialled through node "a" of e to a plain
// listener ("b"), and the accepted end.
func pipe(t *testing.T, e *Emulator) (dialled, accepted net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	e.Node("b").Register(ln.Addr())
	got := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		got <- c
	}()
	dialled, err = e.Node("a").DialContext(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	accepted = <-got
	if accepted == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { dialled.Close(); accepted.Close() })
	return dialled, accepted
}

// TestTCPRoundTrip: a ping-pong over a connection with one-way delays of
// 15 ms (a to b) and 25 ms (b to a) takes at least 40 ms; its median at
// most 40 ms + slack. Control: a zero-delay link's median is below 15 ms.
func TestTCPRoundTrip(t *testing.T) {
	rtt := func(ab, ba time.Duration) time.Duration {
		e, _ := New(1, Link{})
		e.SetLink("a", "b", Link{Delay: ab})
		e.SetLink("b", "a", Link{Delay: ba})
		c, s := pipe(t, e)
		go io.Copy(s, s) // echo
		var rtts []time.Duration
		buf := make([]byte, 8)
		for range 15 {
			start := time.Now()
			if _, err := c.Write(buf); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				t.Fatal(err)
			}
			d := time.Since(start)
			if d < ab+ba {
				t.Fatalf("round trip %v shorter than the links' %v", d, ab+ba)
			}
			rtts = append(rtts, d)
		}
		slices.Sort(rtts)
		return rtts[len(rtts)/2]
	}
	if m := rtt(15*time.Millisecond, 25*time.Millisecond); m > 40*time.Millisecond+slack {
		t.Errorf("median round trip %v, want at most 40ms + %v", m, slack)
	}
	if m := rtt(0, 0); m >= 15*time.Millisecond {
		t.Errorf("control: zero-delay median round trip %v", m)
	}
}

// TestTCPDialTakesARoundTrip: a dial over links of 15 and 25 ms returns
// after the handshake's round trip, 40 ms (never sooner: the wait is a
// timer from the loopback's own handshake), and within slack of it; over
// links without delay it returns at once (the control).
func TestTCPDialTakesARoundTrip(t *testing.T) {
	dial := func(ab, ba time.Duration) time.Duration {
		e, _ := New(1, Link{})
		e.SetLink("a", "b", Link{Delay: ab})
		e.SetLink("b", "a", Link{Delay: ba})
		start := time.Now()
		pipe(t, e)
		return time.Since(start)
	}
	if d := dial(15*time.Millisecond, 25*time.Millisecond); d < 40*time.Millisecond || d > 40*time.Millisecond+slack {
		t.Errorf("dial took %v, want 40ms (+ at most %v)", d, slack)
	}
	if d := dial(0, 0); d >= 15*time.Millisecond {
		t.Errorf("control: a dial over zero-delay links took %v", d)
	}
}

// TestTCPBandwidth: 256 KiB over a 1 MB/s link take at least 0.262 s (the
// transmission time is computed, so the bound is exact) and at most 1.5x
// that plus slack; the control without a rate limit takes under 0.1 s.
func TestTCPBandwidth(t *testing.T) {
	send := func(l Link) time.Duration {
		e, _ := New(2, l)
		c, s := pipe(t, e)
		data := make([]byte, 256<<10)
		for i := range data {
			data[i] = byte(i * 7)
		}
		start := time.Now()
		go func() {
			c.Write(data)
		}()
		got := make([]byte, len(data))
		if _, err := io.ReadFull(s, got); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		if !bytes.Equal(got, data) {
			t.Fatal("bytes changed on the way")
		}
		return d
	}
	want := time.Duration(float64(256<<10) / 1e6 * float64(time.Second))
	if d := send(Link{Bandwidth: 1e6}); d < want || d > want*3/2+slack {
		t.Errorf("256 KiB at 1 MB/s took %v, want %v .. 1.5x + %v", d, want, slack)
	}
	if d := send(Link{}); d > 100*time.Millisecond {
		t.Errorf("control: 256 KiB without a rate limit took %v", d)
	}
}

// TestTCPLoss: 200 one-segment writes over a link losing 5 % of segments:
// P(no loss) = 0.95^200 = 3.5e-5, so the last byte arrives at least one
// RTO (300 ms) late; bytes stay in order. Control: loss 0 delivers within
// the 5 ms delay plus slack.
func TestTCPLoss(t *testing.T) {
	send := func(l Link) time.Duration {
		e, _ := New(3, l)
		c, s := pipe(t, e)
		start := time.Now()
		go func() {
			var b [MSS]byte
			for i := range 200 {
				binary.BigEndian.PutUint32(b[:], uint32(i))
				c.Write(b[:])
			}
		}()
		var b [MSS]byte
		for i := range 200 {
			if _, err := io.ReadFull(s, b[:]); err != nil {
				t.Fatal(err)
			}
			if got := binary.BigEndian.Uint32(b[:]); got != uint32(i) {
				t.Fatalf("segment %d arrived as %d-th", got, i)
			}
		}
		return time.Since(start)
	}
	if d := send(Link{Delay: 5 * time.Millisecond, Loss: 0.05, RTO: 300 * time.Millisecond}); d < 300*time.Millisecond {
		t.Errorf("with 5%% loss the transfer took %v, want at least one 300ms RTO", d)
	}
	if d := send(Link{Delay: 5 * time.Millisecond}); d > 5*time.Millisecond+slack+20*time.Millisecond {
		t.Errorf("control: without loss the transfer took %v", d)
	}
}

// TestTCPEOFAndDeadline: the peer's close arrives after the bytes before
// it, and a read deadline fires as on a socket.
func TestTCPEOFAndDeadline(t *testing.T) {
	e, _ := New(4, Link{Delay: 10 * time.Millisecond})
	c, s := pipe(t, e)
	s.Write([]byte("bye"))
	s.Close()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "bye" {
		t.Fatalf("read %q, %v", b, err)
	}
	c2, _ := pipe(t, e)
	c2.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := c2.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past deadline: %v", err)
	}
}

// udpPair returns a wrapped sender socket (node a) and a plain receiver
// (node b).
func udpPair(t *testing.T, e *Emulator) (*packetConn, *net.UDPConn) {
	t.Helper()
	rx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	rx.SetReadBuffer(4 << 20)
	e.Node("b").Register(rx.LocalAddr())
	tx, err := e.Node("a").ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close(); rx.Close() })
	return tx.(*packetConn), rx
}

// TestUDPDelayAndLoss sends 2,000 timestamped datagrams over a link with
// 20 +- 10 ms delay and 10 % loss.
func TestUDPDelayAndLoss(t *testing.T) {
	run := func(l Link) (lost int64, delays []time.Duration) {
		e, _ := New(5, l)
		tx, rx := udpPair(t, e)
		const n = 2000
		got := make(chan []time.Duration, 1)
		go func() { // the receiver reads while the sender sends
			var ds []time.Duration
			var b [16]byte
			for {
				rx.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
				if _, _, err := rx.ReadFrom(b[:]); err != nil {
					got <- ds
					return
				}
				ds = append(ds, time.Since(time.Unix(0, int64(binary.BigEndian.Uint64(b[:])))))
			}
		}()
		var b [16]byte
		for i := range n {
			binary.BigEndian.PutUint64(b[:], uint64(time.Now().UnixNano()))
			tx.WriteTo(b[:], rx.LocalAddr())
			if i%50 == 49 {
				time.Sleep(time.Millisecond)
			}
		}
		delays = <-got
		lost = tx.Lost()
		if len(delays) != n-int(lost) {
			t.Fatalf("received %d of the %d datagrams sent and not lost", len(delays), n-int(lost))
		}
		return lost, delays
	}
	lost, delays := run(Link{Delay: 20 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.1})
	// Binomial(2000, 0.1): mean 200, sd 13.4; 4 sd = 54.
	if lost < 146 || lost > 254 {
		t.Errorf("lost %d of 2000 at 10%%, want 200 +- 54", lost)
	}
	slices.Sort(delays)
	if delays[0] < 10*time.Millisecond {
		t.Errorf("a datagram arrived after %v, before the 10 ms minimum", delays[0])
	}
	// Uniform on [10, 30] ms: the median is 20 ms, and the sample median of
	// 1,800 has sd 1/(2 f sqrt(n)) = 10 ms/sqrt(1800) = 0.24 ms (f = 1/20
	// per ms): 8 sd below is 18 ms; above, the receiver may add slack.
	if m := delays[len(delays)/2]; m < 18*time.Millisecond || m > 20*time.Millisecond+slack {
		t.Errorf("median delay %v, want 20 ms (+ up to %v)", m, slack)
	}
	// Control: a perfect link loses nothing and adds no delay.
	lost, delays = run(Link{})
	slices.Sort(delays)
	if lost != 0 || delays[len(delays)/2] > 10*time.Millisecond {
		t.Errorf("control: lost %d, median delay %v", lost, delays[len(delays)/2])
	}
}

func TestLinkValidate(t *testing.T) {
	for _, l := range []Link{{Delay: -1}, {Jitter: -1}, {Loss: 1}, {Loss: -0.1}, {Bandwidth: -1}, {RTO: -1}, {Loss: math.NaN()}} {
		if l.Validate() == nil {
			t.Errorf("%+v accepted", l)
		}
	}
	if _, err := New(1, Link{Loss: 2}); err == nil {
		t.Error("New accepted loss 2")
	}
}

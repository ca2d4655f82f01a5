package securesum

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Jacobson/Karels by hand: the first sample R sets srtt = R, rttvar = R/2;
// then rttvar <- 3/4 rttvar + 1/4 |srtt - R|, srtt <- 7/8 srtt + 1/8 R.
func TestRTTEstimator(t *testing.T) {
	r := NewRTTs()
	if got := r.MaxRTO([]protocol.PeerID{"a"}, time.Second); got != time.Second {
		t.Fatalf("no sample: MaxRTO %v, want the fallback 1s", got)
	}
	r.Observe("a", 200*time.Millisecond)
	if rto, ok := r.RTO("a"); !ok || rto != 600*time.Millisecond { // 200 + 4*100
		t.Fatalf("after one sample: RTO %v, want 600ms", rto)
	}
	r.Observe("a", 400*time.Millisecond)
	// rttvar = (3*100 + |200-400|)/4 = 125, srtt = (7*200 + 400)/8 = 225.
	if s, _ := r.SRTT("a"); s != 225*time.Millisecond {
		t.Fatalf("srtt %v, want 225ms", s)
	}
	if rto, _ := r.RTO("a"); rto != 725*time.Millisecond {
		t.Fatalf("RTO %v, want 725ms", rto)
	}
	// An unmeasured peer is taken to be the slowest measured one.
	r.Observe("b", 50*time.Millisecond)
	if rto, ok := r.RTO("c"); ok || rto != 725*time.Millisecond {
		t.Fatalf("unmeasured peer: RTO %v (measured %v), want the largest, 725ms", rto, ok)
	}
	if m := r.MaxRTO([]protocol.PeerID{"b"}, time.Second); m != 150*time.Millisecond {
		t.Fatalf("MaxRTO of b %v, want 150ms", m)
	}
	if m, n := r.MaxSRTT([]protocol.PeerID{"a", "b", "c"}); m != 225*time.Millisecond || n != 2 {
		t.Fatalf("MaxSRTT %v over %d, want 225ms over 2", m, n)
	}
	// Negative samples (a clock that went back) count as zero.
	r.Observe("d", -time.Second)
	if s, _ := r.SRTT("d"); s != 0 {
		t.Fatalf("negative sample gave srtt %v", s)
	}
}

// recClock records the delay of every timer armed on it; time stands still.
type recClock struct {
	now    time.Time
	delays []time.Duration
}

func (c *recClock) Now() time.Time { return c.now }
func (c *recClock) AfterFunc(d time.Duration, _ func()) protocol.Timer {
	c.delays = append(c.delays, d)
	return stopper{}
}

// A step's deadline follows the measured RTTs: with no sample it is the
// floor (Timeout); with 4 s round trips it is the Shamir dealing's depth of 3
// one-way delays, each half the RTO, plus the per-message allowance; and it
// never exceeds the cap.
func TestDeadlinesFollowRTT(t *testing.T) {
	roster := []protocol.PeerID{"a", "b", "c", "d", "e"}
	deadline := func(p Params, rtt *RTTs) time.Duration {
		clock := &recClock{now: time.Unix(1e9, 0)}
		env := Env{Self: "user", Clock: clock, Rand: rng.Seeded(1), Log: hclog.NewNullLogger(), RTT: rtt,
			Send: func(protocol.PeerID, string, *wire.Envelope) {}}
		c := NewCoordinator(env, p)
		if err := c.Sum(Request{Header: hdr, Purpose: "err", Roster: roster, Length: 1}, func([]float64, int, error) {}); err != nil {
			t.Fatal(err)
		}
		if len(clock.delays) != 1 {
			t.Fatalf("%d timers armed, want 1", len(clock.delays))
		}
		return clock.delays[0]
	}
	p := DefaultParams()
	if d := deadline(p, nil); d != p.Timeout {
		t.Errorf("no RTT measured: deadline %v, want the floor %v", d, p.Timeout)
	}
	slow := NewRTTs()
	for _, id := range roster {
		slow.Observe(id, 4*time.Second) // RTO 4 + 4*2 = 12 s: 6 s one way
	}
	want := 3*6*time.Second + time.Duration(len(roster)+len(roster))*p.Processing
	if d := deadline(p, slow); d != want {
		t.Errorf("4 s round trips: deadline %v, want 3 x 6s + 10 x %v = %v", d, p.Processing, want)
	}
	p.MaxWait = 10 * time.Second
	if d := deadline(p, slow); d != p.MaxWait {
		t.Errorf("capped: deadline %v, want the cap %v", d, p.MaxWait)
	}
	// The ring's pass: 2n+1 one-way delays.
	p = DefaultParams()
	p.Method = Ring
	if d, want := deadline(p, slow), time.Duration(2*len(roster)+1)*6*time.Second+time.Duration(2*len(roster))*p.Processing; d != want {
		t.Errorf("ring with 4 s round trips: deadline %v, want %v", d, want)
	}
	if b := RingBound(60, 50*time.Millisecond); b != 121*50*time.Millisecond {
		t.Errorf("RingBound(60, 50ms) = %v, want 121 one-way delays", b)
	}
}

func TestCapAndParamsJSON(t *testing.T) {
	p := DefaultParams()
	if p.Cap() != DefaultMaxWait {
		t.Fatalf("default cap %v", p.Cap())
	}
	p.MaxWait, p.Timeout = time.Second, 5*time.Second
	if p.Cap() != 5*time.Second {
		t.Fatalf("a cap below the timeout is the timeout; got %v", p.Cap())
	}
	p.MaxWait = -time.Second
	if err := p.Validate(); err == nil || !strings.HasPrefix(err.Error(), "max_wait") {
		t.Fatalf("negative max_wait: %v", err)
	}
	q := DefaultParams()
	if err := q.UnmarshalJSON([]byte(`{"max_wait": "30s", "processing": "5ms"}`)); err != nil {
		t.Fatal(err)
	}
	if q.MaxWait != 30*time.Second || q.Processing != 5*time.Millisecond || q.Timeout != DefaultParams().Timeout {
		t.Fatalf("decoded %+v", q)
	}
	if err := q.UnmarshalJSON([]byte(`{"max_wait": "soon"}`)); err == nil || !strings.Contains(err.Error(), "sum.max_wait") {
		t.Fatalf("bad max_wait: %v", err)
	}
}

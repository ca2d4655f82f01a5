package securesum_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/memnet"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// directCluster runs sums over the deterministic in-memory network and
// records, per party, what the coordinator told it: the SumStarts and
// SumResults that arrived on the sum stream, and anything on the control
// topic (the coordinator publishes nothing).
type directCluster struct {
	net    *memnet.Network
	loop   *engine.Driver
	coord  *securesum.Coordinator
	roster []protocol.PeerID
	want   float64
	got    map[protocol.PeerID]*heard
	party  map[protocol.PeerID]*securesum.Party
	// dealers, if set, are the parties of the next sums (a subset of the
	// roster, sorted): the others Serve when a SumStart reaches them.
	dealers []protocol.PeerID
}

type heard struct {
	starts, results, topic int
	startBytes             int
	total                  []float64
	served                 int   // SumStarts this party served as a member only
	err                    error // Begin's or Serve's
}

var directBeacon = []byte("direct beacon")

func newDirectCluster(t *testing.T, n int, p securesum.Params) *directCluster {
	t.Helper()
	log := hclog.NewNullLogger()
	seed := rng.SeedOf(t.Name())
	net := memnet.New(memnet.Options{Seed: seed, Deterministic: true, Delay: time.Millisecond, Jitter: 500 * time.Microsecond})
	t.Cleanup(func() { net.Close() })
	c := &directCluster{net: net, got: map[protocol.PeerID]*heard{}, party: map[protocol.PeerID]*securesum.Party{}}
	for i := range n {
		c.roster = append(c.roster, protocol.PeerID(fmt.Sprintf("owner-%03d", i)))
	}
	uep, err := net.Join("user")
	if err != nil {
		t.Fatal(err)
	}
	c.loop = engine.NewDriver(engine.Config{Clock: net.Clock()})
	c.coord = securesum.NewCoordinator(securesum.PosterEnv("user", protocol.Direct{Tr: uep, Log: log}, c.loop, rng.Derive(seed, 1<<32), log), p)
	uep.SetHandler(func(m protocol.Message) {
		if env, err := wire.Unmarshal(m.Data, wire.MaxSumFrameBytes); err == nil {
			c.loop.Do(func() { c.coord.Handle(m.From, env) })
		}
	})
	sumProto := wire.ProtoShamir
	if p.Method == securesum.Ring {
		sumProto = wire.ProtoRing
	}
	for i, id := range c.roster {
		ep, err := net.Join(id)
		if err != nil {
			t.Fatal(err)
		}
		v := []float64{float64(i%5) / 4, 1}
		c.want += v[0]
		loop := engine.NewDriver(engine.Config{Clock: ep.Clock()})
		party := securesum.NewParty(securesum.PosterEnv(id, protocol.Direct{Tr: ep, Log: log}, loop, rng.Derive(seed, uint64(i)), log), p)
		party.SetRoster(c.roster)
		c.party[id] = party
		h := &heard{}
		c.got[id] = h
		ep.SetHandler(func(m protocol.Message) {
			loop.Do(func() {
				if m.Topic != "" {
					h.topic++
					return
				}
				env, err := wire.Unmarshal(m.Data, wire.MaxSumFrameBytes)
				if err != nil || m.Protocol != sumProto {
					return
				}
				switch {
				case env.GetSumStart() != nil:
					if m.From == "user" { // as an owner checks: the coordinator's, on its authenticated stream
						h.starts++
						h.startBytes = len(m.Data)
						dealers := c.dealers
						if dealers == nil {
							dealers = c.roster
						}
						if _, ok := slices.BinarySearch(dealers, id); ok {
							h.err = party.Begin(env.GetHeader(), env.GetSumStart(), dealers, directBeacon, "user", v)
						} else {
							h.served++
							h.err = party.Serve(env.GetHeader(), env.GetSumStart(), dealers, directBeacon, "user")
						}
					}
				case env.GetSumResult() != nil:
					if m.From == "user" {
						h.results++
						h.total = env.GetSumResult().GetTotal()
					}
				default:
					party.Handle(m.From, env)
				}
			})
		})
		if err := ep.Join(wire.TopicControl); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

type directOutcome struct {
	done    bool
	total   []float64
	parties int
	err     error
}

func (c *directCluster) sum(t *testing.T, round uint32) *directOutcome {
	t.Helper()
	return c.sumOf(t, securesum.Request{Header: &wire.Header{Version: wire.Version, Session: "direct", Round: round},
		Purpose: "err", Roster: c.roster, Length: 2, Beacon: directBeacon})
}

// sumOf runs the sum r names to its end.
func (c *directCluster) sumOf(t *testing.T, r securesum.Request) *directOutcome {
	t.Helper()
	out := &directOutcome{}
	var err error
	c.loop.Call(context.Background(), func() {
		err = c.coord.Sum(r, func(total []float64, parties int, err error) { *out = directOutcome{true, total, parties, err} })
	})
	if err != nil {
		t.Fatal(err)
	}
	c.net.RunUntil(func() bool { return out.done }, time.Hour)
	if !out.done {
		t.Fatal("sum did not end")
	}
	return out
}

func directParams(method string) securesum.Params {
	p := securesum.DefaultParams()
	p.Method, p.Committee, p.Threshold = method, 5, 3
	p.Timeout, p.PingTimeout = time.Second, 200*time.Millisecond
	return p
}

// The coordinator sends each party its SumStart and SumResult on the sum
// stream and publishes nothing; a Shamir SumStart names the committee by
// its digest, so its size does not grow with the committee.
func TestSumStartAndResultGoDirect(t *testing.T) {
	for _, method := range []string{securesum.Shamir, securesum.Ring} {
		t.Run(method, func(t *testing.T) {
			sizes := map[int]int{}
			for _, n := range []int{6, 30} {
				p := directParams(method)
				p.Committee = n // the whole roster: the committee's names would grow with n
				c := newDirectCluster(t, n, p)
				out := c.sum(t, 1)
				// Sums are exact up to the fixed-point scale: each of n
				// values is rounded to within 2^-24.
				if out.err != nil || out.parties != n || math.Abs(out.total[0]-c.want) > float64(n)/(1<<24) {
					t.Fatalf("n=%d: total %v over %d, err %v; want %v over %d", n, out.total, out.parties, out.err, c.want, n)
				}
				c.net.RunFor(time.Second) // the SumResults are in flight when done runs
				for _, id := range c.roster {
					h := c.got[id]
					if h.starts != 1 || h.results != 1 || h.topic != 0 {
						t.Fatalf("n=%d: %s heard %d SumStarts, %d SumResults, %d topic messages; want 1, 1, 0", n, id, h.starts, h.results, h.topic)
					}
					if len(h.total) != 2 || h.total[0] != out.total[0] || h.total[1] != out.total[1] {
						t.Fatalf("n=%d: %s was told the total %v, the coordinator has %v", n, id, h.total, out.total)
					}
				}
				sizes[n] = c.got[c.roster[0]].startBytes
			}
			// A header, purpose, method, length, roster version, threshold
			// and a 32-byte digest: well under 128 bytes whatever n (the
			// 30 names of the old SumStart were 30 x 10 bytes here, 30 x 53
			// with libp2p ids).
			if sizes[6] != sizes[30] || sizes[30] > 128 {
				t.Fatalf("SumStart of %d bytes at n = 6 and %d at n = 30; want the same, under 128", sizes[6], sizes[30])
			}
		})
	}
}

// A SumStart lost on its way to one party is sent again when the instance
// stalls: the party begins late and the total still covers every party. In
// the control, every message from the coordinator to that party is lost,
// and the sum leaves it out: so the first case is recovered by the
// retransmission, not by chance.
func TestLostSumStartIsSentAgain(t *testing.T) {
	for _, method := range []string{securesum.Shamir, securesum.Ring} {
		for _, lost := range []int{1, 1 << 20} {
			t.Run(fmt.Sprintf("%s/lost=%d", method, lost), func(t *testing.T) {
				const n = 6
				c := newDirectCluster(t, n, directParams(method))
				victim := c.roster[3]
				c.net.DropNext("user", victim, lost)
				out := c.sum(t, 1)
				if out.err != nil {
					t.Fatal(out.err)
				}
				started := c.party[victim].Stats().Started
				if lost == 1 {
					if out.parties != n || started != 1 || c.got[victim].starts != 1 {
						t.Fatalf("total over %d parties, the victim began %d instances on %d SumStarts; want %d, 1, 1", out.parties, started, c.got[victim].starts, n)
					}
					return
				}
				if out.parties != n-1 || started != 0 {
					t.Fatalf("control: total over %d parties, the victim began %d instances; want %d, 0", out.parties, started, n-1)
				}
			})
		}
	}
}

// A party checks the committee a SumStart names, in full or by digest,
// against the one it computes from its roster and beacon.
func TestSumStartCommitteeChecked(t *testing.T) {
	p := directParams(securesum.Shamir)
	roster := []protocol.PeerID{"a", "b", "c", "d", "e", "f", "g"}
	h := &wire.Header{Version: wire.Version, Session: "s", Round: 1}
	beacon := []byte("beacon")
	com := securesum.Committee(roster, p.Committee, beacon, h, "err", 7)
	names := make([]string, len(com))
	for i, m := range com {
		names[i] = string(m)
	}
	other := append([]protocol.PeerID{com[1], com[0]}, com[2:]...)
	start := func(names []string, digest []byte) *wire.SumStart {
		return &wire.SumStart{Purpose: "err", Instance: 7, Method: securesum.Shamir, Length: 1, Threshold: uint32(p.ThresholdFor(len(com))),
			Committee: names, CommitteeDigest: digest}
	}
	env := securesum.Env{Self: "a", Clock: protocol.RealClock{}, Rand: rng.Seeded(1), Log: hclog.NewNullLogger(),
		Send: func(protocol.PeerID, string, *wire.Envelope) {}}
	for _, c := range []struct {
		name  string
		start *wire.SumStart
		want  error
	}{
		{"digest", start(nil, securesum.CommitteeDigest(com)), nil},
		{"names", start(names, nil), nil},
		{"another committee's digest", start(nil, securesum.CommitteeDigest(other)), securesum.ErrRefused},
		{"no committee", start(nil, nil), securesum.ErrRefused},
		{"names and digest", start(names, securesum.CommitteeDigest(com)), securesum.ErrMalformed},
	} {
		err := securesum.NewParty(env, p).Check(h, c.start, roster, beacon)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

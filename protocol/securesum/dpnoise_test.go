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

	"github.com/ppboost/ppboost/crypto/dpnoise"
	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/memnet"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// noisyCluster runs Shamir sums whose parties add distributed noise
// (Env.Noise = dpnoise.Params.Noise) over the deterministic in-memory
// network: one loop per node, the coordinator on the user's.
type noisyCluster struct {
	net    *memnet.Network
	loop   *engine.Driver
	coord  *securesum.Coordinator
	roster []protocol.PeerID
	values map[protocol.PeerID][]float64
}

var noisyBeacon = []byte("dpnoise beacon")

func newNoisyCluster(t *testing.T, n int, p securesum.Params, noise dpnoise.Params, value func(i, j int) float64, length int) *noisyCluster {
	t.Helper()
	log := hclog.NewNullLogger()
	seed := rng.SeedOf(t.Name())
	net := memnet.New(memnet.Options{Seed: seed, Deterministic: true, Delay: time.Millisecond, Jitter: 500 * time.Microsecond})
	t.Cleanup(func() { net.Close() })
	c := &noisyCluster{net: net, values: map[protocol.PeerID][]float64{}}
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
	for i, id := range c.roster {
		ep, err := net.Join(id)
		if err != nil {
			t.Fatal(err)
		}
		v := make([]float64, length)
		for j := range v {
			v[j] = value(i, j)
		}
		c.values[id] = v
		loop := engine.NewDriver(engine.Config{Clock: ep.Clock()})
		env := securesum.PosterEnv(id, protocol.Direct{Tr: ep, Log: log}, loop, rng.Derive(seed, uint64(i)), log)
		env.Noise = noise.Noise(rng.Derive(seed, 1<<40, uint64(i)))
		party := securesum.NewParty(env, p)
		party.SetRoster(c.roster)
		ep.SetHandler(func(m protocol.Message) {
			loop.Do(func() {
				env, err := wire.Unmarshal(m.Data, wire.MaxControlBytes)
				if err != nil {
					return
				}
				switch {
				case env.GetSumStart() != nil: // from the coordinator, on the sum stream
					if m.From == "user" {
						_ = party.Begin(env.GetHeader(), env.GetSumStart(), c.roster, noisyBeacon, "user", v)
					}
				case env.GetSumResult() != nil:
				case m.Protocol == wire.ProtoShamir:
					party.Handle(m.From, env)
				}
			})
		})
	}
	return c
}

type noisyOutcome struct {
	done    bool
	total   []float64
	parties int
	err     error
}

func (c *noisyCluster) sum(t *testing.T, purpose string, length int) *noisyOutcome {
	t.Helper()
	out := &noisyOutcome{}
	h := &wire.Header{Version: wire.Version, Session: "dpnoise", Round: 1}
	var err error
	c.loop.Call(context.Background(), func() {
		err = c.coord.Sum(securesum.Request{Header: h, Purpose: purpose, Roster: c.roster, Length: length, Beacon: noisyBeacon},
			func(total []float64, parties int, err error) { *out = noisyOutcome{true, total, parties, err} })
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

// TestDistributedNoiseThroughShamir runs the noise design through the real
// Shamir sum: 8 owners, committee 8 with a majority threshold t = 5, shares
// sized for h = 5 honest owners, and min_parties = 6 = h + c for c = 1
// colluding owner. For every number of silent owners the design allows
// (0, 1, 2) the sum completes over the others and its decoded noise — the
// total minus the sum of the encoded values, times S — passes a chi-square
// test against the exact pmf of the sum of that many shares. With 3 silent
// owners only 5 dealers are left, below min_parties: the coordinator
// refuses to reveal anything (ErrTooFew, no total).
func TestDistributedNoiseThroughShamir(t *testing.T) {
	const n, h, colluders, length, sums = 8, 5, 1, 4000, 5
	p := securesum.DefaultParams()
	p.Committee, p.MinParties = n, h+colluders
	p.Timeout, p.PingTimeout = 200*time.Millisecond, 100*time.Millisecond
	noise := dpnoise.Params{Scale: 3, Honest: h}
	codec, _ := field.NewCodec(p.ScaleBits)
	value := func(i, j int) float64 { return float64((i*7+j)%9-4) / 8 } // exact in fixed point
	for silent := 0; silent <= n-p.MinParties+1; silent++ {
		t.Run(fmt.Sprintf("silent=%d", silent), func(t *testing.T) {
			c := newNoisyCluster(t, n, p, noise, value, length)
			for _, id := range c.roster[:silent] {
				c.net.Kill(id)
			}
			k := n - silent
			var samples []int64
			for s := range sums {
				out := c.sum(t, fmt.Sprintf("hist-%d", s), length)
				if k < p.MinParties {
					if !errors.Is(out.err, securesum.ErrTooFew) || out.total != nil {
						t.Fatalf("sum over %d dealers (floor %d): err %v, total revealed: %v", k, p.MinParties, out.err, out.total != nil)
					}
					t.Logf("%d dealers left, floor %d: %v", k, p.MinParties, out.err)
					return
				}
				if out.err != nil || out.parties != k {
					t.Fatalf("sum: err %v over %d parties, want %d", out.err, out.parties, k)
				}
				for j := range length {
					want := 0.0
					for _, id := range c.roster[silent:] {
						want += c.values[id][j]
					}
					samples = append(samples, int64(math.Round((out.total[j]-want)*codec.Scale())))
				}
			}
			stat, df := dpnoise.ChiSquare(samples, func(x int64) float64 { return noise.SumPMF(k, x) })
			crit := dpnoise.ChiSquareCritical(df, 1e-4)
			t.Logf("%d dealers: chi2 = %.1f, df = %d, critical %.1f", k, stat, df, crit)
			if stat > crit {
				t.Fatalf("noise of the revealed total: chi2 = %.1f > %.1f", stat, crit)
			}
			// Negative control on the same samples: the pmf of h shares
			// scaled 20% up (a wrong target) is rejected.
			wrong := dpnoise.Params{Scale: 3.6, Honest: h}
			if ws, wdf := dpnoise.ChiSquare(samples, func(x int64) float64 { return wrong.SumPMF(k, x) }); ws <= dpnoise.ChiSquareCritical(wdf, 1e-4) {
				t.Fatalf("wrong scale accepted: chi2 = %.1f", ws)
			}
			if slices.Contains(c.coord.Dead(), c.roster[silent]) {
				t.Fatal("a live owner was left out")
			}
		})
	}
}

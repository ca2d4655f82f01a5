package experiment

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/marcopolo/simnet"

	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/node/netem"
	"github.com/ppboost/ppboost/node/simnat"
)

// newWANLinks builds the links of case c: a simulated internet (c.Sim) with
// c's latency, jitter and loss, or node/netem's emulated links of c's delay
// on loopback. close ends them (after the hosts on them).
func newWANLinks(c wanCase, seed uint64) (links wanLinks, close func(), err error) {
	if !c.Sim {
		if c.Jitter != 0 || c.Loss != 0 || c.UserMbps != 0 {
			return nil, nil, fmt.Errorf("jitter, loss and the user's bandwidth need the simulated internet (Sim)")
		}
		em, err := netem.New(seed, netem.Link{Delay: c.Delay})
		if err != nil {
			return nil, nil, err
		}
		return netemLinks{em}, func() {}, nil
	}
	if c.Loss < 0 || c.Loss >= 1 || c.Jitter < 0 {
		return nil, nil, fmt.Errorf("loss %v (want [0, 1)) or jitter %v (want >= 0)", c.Loss, c.Jitter)
	}
	mapping := simnat.EndpointIndependent
	if c.NATSymmetric {
		mapping = simnat.Symmetric
	}
	sl := newSimLinks(simLatency(c.Delay, c.Jitter, seed), c.NAT, mapping)
	sl.loss, sl.seed, sl.userBPS = c.Loss, seed, c.UserMbps*1_000_000
	return sl, func() {
		// The hosts close meanwhile (a harness runs its closers at once).
		// What they leave running must end inside the synctest bubble,
		// whose clock stops when the test function returns: AutoNAT's
		// dial-back service waits out its dial timeout (15 s) after a
		// failed dial, closed host or not (go-libp2p v0.51.0
		// p2p/host/autonat/svc.go).
		time.Sleep(time.Minute)
		sl.close()
	}, nil
}

// simLatency is a simulated path's one-way latency: d, plus a jitter drawn
// uniformly from [0, jitter) for each datagram (so datagrams of one flow
// may be reordered, as on a real path with several routes; QUIC copes).
// The draws come from one generator seeded by seed, in the order the
// router asks (which the bubble's scheduling may vary).
func simLatency(d, jitter time.Duration, seed uint64) func(*simnet.Packet) time.Duration {
	if jitter == 0 {
		return simnet.StaticLatency(d)
	}
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, 0x6a17e4))
	return func(*simnet.Packet) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return d + time.Duration(r.Int64N(int64(jitter)))
	}
}

// wanRig is what a WAN session harness (wanSessionRig, wanFedRig) shares:
// its links, its hosts by name, and what to close.
type wanRig struct {
	n       int
	d       time.Duration
	seed    uint64
	dir, tr string
	lk      wanLinks
	user    *node.Host
	owners  []string     // the owner hosts' names
	hosts   []*node.Host // the owner hosts
	closers []func()
}

// links builds c's links (newWANLinks).
func (r *wanRig) links(c wanCase) error {
	lk, closeLinks, err := newWANLinks(c, r.seed)
	if err != nil {
		return err
	}
	r.lk = lk
	r.closers = append(r.closers, closeLinks)
	return nil
}

func (r *wanRig) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// host starts the host called name on the rig's links.
func (r *wanRig) host(ctx context.Context, name string) (*node.Host, error) {
	x, err := r.lk.newHost(ctx, r.dir, name, r.tr, r.n)
	if err != nil {
		return nil, err
	}
	r.closers = append(r.closers, func() { x.Close() })
	if name != "user" {
		r.owners, r.hosts = append(r.owners, name), append(r.hosts, x)
	}
	return x, nil
}

// dupEnds counts the owners' second (and later) connections to a peer they
// are connected to already: each pair should hold one.
func (r *wanRig) dupEnds() int {
	n := 0
	for _, x := range r.hosts {
		nw := x.Host().Network()
		n += len(nw.Conns()) - len(nw.Peers())
		if os.Getenv("PPBOOST_DBG") != "" {
			// Each duplicate's ends: which side dialled, when it opened.
			for _, p := range nw.Peers() {
				cs := nw.ConnsToPeer(p)
				if len(cs) > 1 {
					for _, c := range cs {
						fmt.Fprintf(os.Stderr, "DUP %s -> %s dir=%v opened=%s limited=%v remote=%s\n", x.Host().ID().ShortString(), p.ShortString(), c.Stat().Direction, c.Stat().Opened.Format("05.000"), c.Stat().Limited, c.RemoteMultiaddr())
					}
				}
			}
		}
	}
	return n
}

// expectStats sums the owner hosts' node.Host.ExpectStats.
func (r *wanRig) expectStats() (met, lapsed int64) {
	for _, x := range r.hosts {
		m, l := x.ExpectStats()
		met, lapsed = met+m, lapsed+l
	}
	return met, lapsed
}

// wireSent is what the owners have put on the wire so far.
func (r *wanRig) wireSent() int64 {
	var t int64
	for _, name := range r.owners {
		t += r.lk.sent(name)
	}
	return t
}

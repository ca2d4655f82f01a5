package experiment

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/node/netem"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// wanOwnerInfo is what the rest of the harness needs to know about one
// owner host: who it is and where it listens.
type wanOwnerInfo struct {
	Index    int      `json:"index"`
	ID       string   `json:"id"`
	Addrs    []string `json:"addrs"`     // full multiaddrs
	NetAddrs []string `json:"net_addrs"` // "tcp 127.0.0.1:P" or "udp 127.0.0.1:P", for netem
}

// wanGroupStats are a group's counters at one moment.
type wanGroupStats struct {
	// Wire is the bytes this process's emulator charged to owners (see
	// wanGroup.stats); summed over the processes it is every byte the
	// owners put on the wire.
	Wire  int64 `json:"wire"`
	Proto int64 `json:"proto"` // sum message bytes the group's owners handed to Send
	// ConnEnds counts the group's owners' open connections, PeerEnds their
	// distinct remote peers, OwnerEnds the connections whose remote end is
	// another owner (each owner-to-owner connection is counted at both
	// ends, in whichever processes they are).
	ConnEnds  int `json:"conn_ends"`
	PeerEnds  int `json:"peer_ends"`
	OwnerEnds int `json:"owner_ends"`
	// RelayedEnds counts the open connections that run through a relay
	// (a dial that fell back to it; closed once a direct one is open and
	// the node's grace has passed).
	RelayedEnds int `json:"relayed_ends"`
	// PrepFailed counts the group's prepare dials that failed (a
	// handshake past DialTimeout on a loaded machine, say).
	PrepFailed int64 `json:"prepare_failed"`
}

func (s *wanGroupStats) add(o wanGroupStats) {
	s.Wire += o.Wire
	s.Proto += o.Proto
	s.ConnEnds += o.ConnEnds
	s.PeerEnds += o.PeerEnds
	s.OwnerEnds += o.OwnerEnds
	s.RelayedEnds += o.RelayedEnds
	s.PrepFailed += o.PrepFailed
}

// wanGroupSpec is what a group of owners is built from: the case, the
// owners' indices [Lo, Hi) among all, and the data user's host.
type wanGroupSpec struct {
	Case         wanCase  `json:"case"`
	Seed         uint64   `json:"seed"`
	Lo           int      `json:"lo"`
	Hi           int      `json:"hi"`
	UserID       string   `json:"user_id"`
	UserAddrs    []string `json:"user_addrs"`
	UserNetAddrs []string `json:"user_net_addrs"`
}

// wanGroup is some of a harness's owners, in one process: each a libp2p
// host behind the process's emulator, with a Shamir or ring party on its
// own loop. The one-process harness has one group with every owner; the
// multi-process harness one per child process (wan_proc.go).
type wanGroup struct {
	spec    wanGroupSpec
	links   wanLinks
	hosts   []*node.Host
	proto   atomic.Int64
	roster  []protocol.PeerID
	names   []string // every owner's emulator name, by index
	owners  map[string]bool
	closers []func()
}

func wanOwnerName(i int) string { return fmt.Sprintf("owner-%03d", i) }

// wanNewHost starts one host behind em's node called name, with its key in
// dir, listening on loopback for the transport.
func wanNewHost(ctx context.Context, em *netem.Emulator, dir, name, transport string, expected int) (*node.Host, error) {
	key := filepath.Join(dir, name+".key")
	if _, err := node.GenerateKey(key); err != nil {
		return nil, err
	}
	listen := "/ip4/127.0.0.1/tcp/0"
	if transport == "quic" {
		listen = "/ip4/127.0.0.1/udp/0/quic-v1"
	}
	cfg := node.DefaultConfig()
	cfg.KeyFile, cfg.ListenAddrs, cfg.ExpectedPeers, cfg.Logger = key, []string{listen}, expected+8, hclog.NewNullLogger()
	n := em.Node(name)
	x, err := node.New(ctx, cfg, node.Emulated(n)...)
	if err != nil {
		return nil, err
	}
	n.Register(x.NetAddrs()...)
	return x, nil
}

// wanNetAddrs renders net addresses for wanOwnerInfo.NetAddrs.
func wanNetAddrs(addrs []net.Addr) []string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.Network()+" "+a.String())
	}
	return out
}

// wanRegister records in em that the node called name listens at addrs
// (from wanNetAddrs), so that bytes it sends on connections this process
// dialled are charged to it. Registering a node of this process again is
// harmless.
func wanRegister(em *netem.Emulator, name string, addrs []string) error {
	var out []net.Addr
	for _, s := range addrs {
		var netw, hp string
		if _, err := fmt.Sscan(s, &netw, &hp); err != nil {
			return fmt.Errorf("net address %q of %s: %w", s, name, err)
		}
		var a net.Addr
		var err error
		switch netw {
		case "tcp":
			a, err = net.ResolveTCPAddr("tcp", hp)
		case "udp":
			a, err = net.ResolveUDPAddr("udp", hp)
		default:
			err = fmt.Errorf("network %q", netw)
		}
		if err != nil {
			return fmt.Errorf("net address %q of %s: %w", s, name, err)
		}
		out = append(out, a)
	}
	em.Node(name).Register(out...)
	return nil
}

// newWANGroup starts the hosts of owners [Lo, Hi) behind em and connects
// each to the data user. It returns their infos, in index order.
func newWANGroup(ctx context.Context, links wanLinks, dir string, spec wanGroupSpec) (*wanGroup, []wanOwnerInfo, error) {
	c := spec.Case
	if spec.Lo < 0 || spec.Hi > c.Owners || spec.Lo >= spec.Hi {
		return nil, nil, fmt.Errorf("owners [%d, %d) of %d", spec.Lo, spec.Hi, c.Owners)
	}
	if err := links.register("user", spec.UserNetAddrs); err != nil {
		return nil, nil, err
	}
	g := &wanGroup{spec: spec, links: links, hosts: make([]*node.Host, spec.Hi-spec.Lo)}
	errs := make([]error, len(g.hosts))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for k := range g.hosts {
		wg.Add(1)
		sem <- struct{}{}
		go func(k int) {
			defer func() { <-sem; wg.Done() }()
			x, err := links.newHost(ctx, dir, wanOwnerName(spec.Lo+k), c.Transport, c.Owners)
			if err != nil {
				errs[k] = err
				return
			}
			g.hosts[k] = x
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if errs[k] = x.Connect(cctx, spec.UserAddrs[0]); errs[k] == nil && c.NAT > 0 {
				errs[k] = awaitCircuit(cctx, x)
			}
		}(k)
	}
	wg.Wait()
	infos := make([]wanOwnerInfo, len(g.hosts))
	for k, x := range g.hosts {
		if x != nil {
			g.closers = append(g.closers, func() { x.Close() })
			infos[k] = wanOwnerInfo{Index: spec.Lo + k, ID: string(x.ID()), Addrs: x.Addrs(), NetAddrs: wanNetAddrs(x.NetAddrs())}
		}
	}
	for k, err := range errs {
		if err != nil {
			g.close()
			return nil, nil, fmt.Errorf("owner %d: %w", spec.Lo+k, err)
		}
	}
	return g, infos, nil
}

// awaitCircuit waits until x holds a relay slot at the data user (its
// addresses include a circuit address), as an owner behind a NAT does
// before its roster entry is of use to owners behind other NATs.
func awaitCircuit(ctx context.Context, x *node.Host) error {
	for {
		for _, a := range x.Addrs() {
			if strings.Contains(a, "/p2p-circuit") {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no relay slot: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (g *wanGroup) close() {
	var wg sync.WaitGroup
	for i := len(g.closers) - 1; i >= 0; i-- {
		wg.Add(1)
		go func(f func()) { defer wg.Done(); f() }(g.closers[i])
	}
	wg.Wait()
	g.closers = nil
}

// wanValue is owner i's input to every sum (the harness checks the total).
func wanValue(i int) []float64 { return []float64{float64(i%7) / 8, 1} }

// setRoster gives the group every owner (all of them, in index order):
// their addresses go into the hosts' peerstores and the emulator, each
// local owner gets its party, and the hosts join the control topic.
func (g *wanGroup) setRoster(all []wanOwnerInfo) error {
	c := g.spec.Case
	if len(all) != c.Owners {
		return fmt.Errorf("roster of %d owners, want %d", len(all), c.Owners)
	}
	g.names = make([]string, len(all))
	g.owners = map[string]bool{}
	for i, o := range all {
		if o.Index != i {
			return fmt.Errorf("roster entry %d has index %d", i, o.Index)
		}
		g.names[i] = wanOwnerName(i)
		g.owners[o.ID] = true
		if err := g.links.register(g.names[i], o.NetAddrs); err != nil {
			return err
		}
		g.roster = append(g.roster, protocol.PeerID(o.ID))
	}
	slices.Sort(g.roster)
	log := hclog.NewNullLogger()
	p := wanParams(c)
	user := protocol.PeerID(g.spec.UserID)
	for k, x := range g.hosts {
		for _, o := range all {
			x.AddAddrs(protocol.PeerID(o.ID), o.Addrs)
		}
		i := g.spec.Lo + k
		loop := engine.NewDriver(engine.Config{})
		g.closers = append(g.closers, func() { loop.Close() })
		post := protocol.NewOutbox(x, 30*time.Second, log)
		g.closers = append(g.closers, post.Close)
		party := securesum.NewParty(securesum.PosterEnv(x.ID(), countingPoster{post, &g.proto}, loop, rng.Seeded(g.spec.Seed<<16+uint64(i)), log), p)
		party.SetRoster(g.roster)
		v, roster := wanValue(i), g.roster
		x.SetHandler(func(m protocol.Message) {
			e, err := wire.Unmarshal(m.Data, wire.MaxControlBytes)
			if err != nil {
				return
			}
			loop.Deliver(func() {
				if s := e.GetSumStart(); s != nil {
					party.Begin(e.GetHeader(), s, roster, []byte("beacon"), user, v)
					return
				}
				party.Handle(m.From, e)
			})
		})
		if err := x.Join(wire.TopicControl); err != nil {
			return fmt.Errorf("owner %d: %w", i, err)
		}
	}
	return nil
}

// wanCommittee is the Shamir committee of round's sum (nil for the ring).
func wanCommittee(c wanCase, roster []protocol.PeerID, round int) []protocol.PeerID {
	p := wanParams(c)
	if p.Method != securesum.Shamir {
		return nil
	}
	return securesum.Committee(roster, p.Committee, []byte("beacon"), wanHeader(round), "err", 0)
}

// prepare has every owner of the group open the connections the sum of
// round needs, as a session's owners do when the roster is fixed
// (securesum.PreparePeers on the sum's committee), and waits until every
// dial has ended or two minutes have passed. It returns the time taken and
// the dials still unfinished.
func (g *wanGroup) prepare(ctx context.Context, round int) (float64, int64) {
	com := wanCommittee(g.spec.Case, g.roster, round)
	method := wanParams(g.spec.Case).Method
	start := time.Now()
	want := make([]int64, len(g.hosts))
	base := make([]int64, len(g.hosts))
	for i, x := range g.hosts {
		d, f, sk := x.PrepareStats()
		base[i] = d + f + sk
		peers := securesum.PreparePeers(x.ID(), g.roster, method, com)
		want[i] = int64(len(peers))
		x.Prepare(ctx, peers)
	}
	deadline := start.Add(2 * time.Minute)
	for {
		var left int64
		for i, x := range g.hosts {
			d, f, sk := x.PrepareStats()
			left += max(0, want[i]-(d+f+sk-base[i]))
		}
		if left == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return time.Since(start).Seconds(), left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stats reads the group's counters. Wire is what this process's emulator
// charged to any owner: the bytes local owners sent on connections this
// process dialled or as datagrams, and the bytes remote owners sent back on
// connections a local host dialled (netem charges a connection's both
// directions where it was dialled). Every byte is charged in exactly one
// process, so the sum over processes is the owners' total.
func (g *wanGroup) stats() wanGroupStats {
	var s wanGroupStats
	for _, name := range g.names {
		s.Wire += g.links.sent(name)
	}
	s.Proto = g.proto.Load()
	for _, x := range g.hosts {
		nw := x.Host().Network()
		conns := nw.Conns()
		s.ConnEnds += len(conns)
		s.PeerEnds += len(nw.Peers())
		_, failed, _ := x.PrepareStats()
		s.PrepFailed += failed
		for _, cn := range conns {
			if g.owners[cn.RemotePeer().String()] {
				s.OwnerEnds++
			}
			if cn.Stat().Limited || strings.Contains(cn.RemoteMultiaddr().String(), "/p2p-circuit") {
				s.RelayedEnds++
			}
		}
	}
	return s
}

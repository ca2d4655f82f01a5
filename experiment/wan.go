package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

func init() {
	Register(Spec{
		Name:  "wan",
		Paper: "issue 20: owners 25-100 ms apart",
		Summary: "secure sums and sessions among real libp2p hosts (TCP, QUIC) behind emulated links of 0/25/50/100 ms " +
			"one way: time, latency added in one-way delays against each protocol's bound, dealers excluded, wire vs protocol bytes",
		Run: func(r *Run) error { return runWAN(r, "wan", wanGrid(r.Short)) },
	})
	Register(Spec{
		Name:  "wan-goals",
		Paper: "issue 20: the latency and wire goals",
		Summary: "the cases issue 20's goals name, from the wan grid: Shamir sums among 200 owners at 0 and 100 ms one way " +
			"(TCP), idle and with every core loaded, first and warm, and 20 owners' wire bytes at 0 and 100 ms",
		Run: func(r *Run) error { return runWAN(r, "wan-goals", wanGoalGrid(r.Short)) },
	})
	Register(Spec{
		Name:  "wan-200",
		Paper: "issue 20: the 200-owner goal rows",
		Summary: "the idle 200-owner TCP Shamir cases of wan-goals (0 and 100 ms one way, with and without every sum's " +
			"connections opened before it): to re-measure the key rows when the machine is quieter",
		Run: func(r *Run) error {
			var grid []wanCase
			for _, c := range wanGoalGrid(r.Short) {
				if !c.Load && (c.Owners == 200 || r.Short && c.Owners == 6) {
					grid = append(grid, c)
				}
			}
			return runWAN(r, "wan-200", grid)
		},
	})
	Register(Spec{
		Name:  "wan-60",
		Paper: "issue 31: real hosts, 60 owners, 50 ms one way",
		Summary: "Shamir sums among 60 real libp2p hosts in one process on loopback (TCP and QUIC), behind emulated links of " +
			"0 and 50 ms one way (a TCP dial takes its handshake's round trip): a first and four warm sums, their latency " +
			"added against the bound of 5 one-way delays, duplicate connections and wire against protocol bytes, and two " +
			"steady sums once the connections are past QUIC's path-MTU probes (after 12 more sums)",
		Run: func(r *Run) error {
			n := 60
			if r.Short {
				n = 6
			}
			var grid []wanCase
			for _, tr := range []string{"tcp", "quic"} {
				for _, d := range []time.Duration{0, 50 * time.Millisecond} {
					grid = append(grid, wanCase{Transport: tr, Owners: n, Method: securesum.Shamir, Delay: d, Warm: 4, Settle: true, Steady: 2})
				}
			}
			return runWAN(r, "wan-60", grid)
		},
	})
	Register(Spec{
		Name:    "wan-200-quic",
		Paper:   "issue 20: the 200-owner goal rows on QUIC",
		Summary: "wan-200's cases on QUIC instead of TCP",
		Run: func(r *Run) error {
			var grid []wanCase
			for _, c := range wanGoalGrid(r.Short) {
				if !c.Load && (c.Owners == 200 || r.Short && c.Owners == 6) {
					c.Transport = "quic"
					grid = append(grid, c)
				}
			}
			return runWAN(r, "wan-200-quic", grid)
		},
	})
}

// wanGoalGrid is the subset of the wan grid the goals of issue 20 are
// judged on, and each 200-owner case again with every sum's connections
// opened before it (PrepareEach).
func wanGoalGrid(short bool) []wanCase {
	var out []wanCase
	for _, c := range wanGrid(short) {
		big := c.Owners == 200 || short && c.Owners == 6
		if c.Transport == "tcp" && c.Method == securesum.Shamir && (c.Delay == 0 || c.Delay == 100*time.Millisecond || short) &&
			(big || c.Owners == 20 && !c.Load) {
			out = append(out, c)
			if big {
				// The same with every sum's connections opened before it.
				c.PrepareEach = true
				out = append(out, c)
			}
		}
	}
	return out
}

// The latency bound of a sum is the depth of its message chain: the
// longest sequence of messages each of which is sent only after the one
// before it arrived, counted in one-way delays. From the code
// (protocol/securesum):
//
//   - Shamir: the coordinator publishes SumStart (1); each dealer sends
//     its shares to the committee (2); a member that holds every dealer's
//     share sends SHAMIR_HOLDING (3); when every member holds every share
//     the coordinator fixes the dealer set and sends SHAMIR_DEALERS (4);
//     each member answers SHAMIR_PARTIAL (5), and t of them give the
//     total. Bound 5, whatever the number of owners.
//   - Ring (n parties): SumStart (1); the forward pass goes from party 1
//     around the ring back to party 1 (n hops); the backward pass from
//     party 1 to party n (n-1 hops); party n sends RING_TOTAL (1). Bound
//     2n+1.
//
// The same chain bounds a first sum, which in addition opens connections
// (the goal allows it 3x its bound, a warm sum 1.5x).
func wanBound(method string, n int) int {
	switch method {
	case securesum.Ring:
		return 2*n + 1
	case wanSessionMethod:
		return wanSessionBound()
	case wanFedMethod:
		return wanFedBound()
	}
	return 5
}

// wanSessionMethod marks the cases that train a short session.
const wanSessionMethod = "session"

// wanCase is one harness: a user and n owners on one transport behind
// links of one delay, running one method's sums.
type wanCase struct {
	Transport string        `json:"transport"` // tcp | quic
	Owners    int           `json:"owners"`
	Method    string        `json:"method"`
	Delay     time.Duration `json:"delay_ns"`
	Load      bool          `json:"load"` // CPU burners on every core (in every process)
	Warm      int           `json:"warm_sums"`
	// Procs is the number of child processes the owners run in: 0 picks
	// (wanProcs: all in this process up to 60 owners, else 50 per child),
	// -1 forces one process.
	Procs int `json:"procs,omitempty"`
	// PrepareEach has the owners open every sum's connections before it
	// starts (the harness calls prepare with each sum's committee), not
	// only the first's as a session does today: the committee of each
	// round is new, so without it every warm sum dials. Its sums are of
	// kinds first+prep and warm+prep.
	PrepareEach bool `json:"prepare_each,omitempty"`
	// Settle waits before each sum until the owners' wire counters stop
	// moving (tests that compare byte counts; see settle).
	Settle bool `json:"settle,omitempty"`
	// Sim runs the case on a simulated internet (simLinks, QUIC, all
	// owners in this process) instead of emulated links on loopback; run
	// it inside testing/synctest's bubble, where its times are virtual.
	Sim bool `json:"sim,omitempty"`
	// Jitter adds to every datagram's latency a delay drawn uniformly
	// from [0, Jitter), and Loss loses each datagram with this
	// probability (the simulated internet only).
	Jitter time.Duration `json:"jitter_ns,omitempty"`
	Loss   float64       `json:"loss,omitempty"`
	// UserMbps is the data user's uplink and downlink on the simulated
	// internet, in Mbit/s (0: the owners' 100); a thinner one makes a
	// smaller roster load the user's link as a larger one would.
	UserMbps int `json:"user_mbps,omitempty"`
	// Rounds is a session's rounds (W&C) or trees (federated Newton); 0
	// picks the method's default (wanSessionRounds, wanFedTrees).
	Rounds int `json:"rounds,omitempty"`
	// NAT puts the owners of a Sim case behind this many NAT routers
	// (owner i behind NAT i mod NAT); NATSymmetric gives them symmetric
	// mapping, through which hole punching fails (node/simnat).
	NAT          int  `json:"nat,omitempty"`
	NATSymmetric bool `json:"nat_symmetric,omitempty"`
	// Steady runs this many more sums (kind "steady") after the warm
	// ones and steadyWarmup unmeasured ones: QUIC's path-MTU discovery
	// (quic-go, on sockets that can set the don't-fragment bit) sends a
	// padded probe of 1.3-1.4 KB on a connection that is sending anyway,
	// one in flight at a time, at most every 5 round trips, until it has
	// bracketed the path's MTU (about 4 on loopback): a connection's
	// first sums carry them. The steady sums are past them.
	Steady int `json:"steady_sums,omitempty"`
}

// steadyWarmup is the number of sums run, unmeasured, before a case's
// steady ones: at 60 owners each sum's committee is 32 of them, so a
// connection carries about every other sum, and its path-MTU probes are
// over after about 4 of those.
const steadyWarmup = 12

// rounds is c's session length (Rounds, or the method's default).
func (c wanCase) rounds() int {
	switch {
	case c.Rounds > 0:
		return c.Rounds
	case c.Method == wanFedMethod:
		return wanFedTrees
	}
	return wanSessionRounds
}

// wanPunch is where hole punching left a NAT case's owner pairs, counted
// over the pairs the first sum's committee joins, after its connections
// were opened (and DCUtR given punchSettle).
type wanPunch struct {
	Pairs       int `json:"pairs"`        // owner pairs behind two different NATs
	Direct      int `json:"direct"`       // of them, holding a direct connection
	Relayed     int `json:"relayed"`      // only a relayed one
	SameNAT     int `json:"same_nat"`     // pairs on one NAT's LAN
	SameNATDir  int `json:"same_nat_dir"` // of them, direct (LAN addresses)
	Unconnected int `json:"unconnected"`  // no connection at all
	// PunchOK and PunchFailed are the owners' ppboost_holepunch_total
	// (each punch is counted at both ends).
	PunchOK     int64 `json:"punch_ok"`
	PunchFailed int64 `json:"punch_failed"`
}

// Fraction is the share of the pairs behind different NATs that are
// direct.
func (p wanPunch) Fraction() float64 {
	if p.Pairs == 0 {
		return 0
	}
	return float64(p.Direct) / float64(p.Pairs)
}

// punchSettle is how long a NAT case waits after opening the first sum's
// connections before it counts direct pairs: DCUtR upgrades a relayed
// connection within a few round trips (up to 3 attempts).
const punchSettle = 10 * time.Second

// wanSum is one measured sum.
type wanSum struct {
	Kind      string  `json:"kind"` // first | warm
	Seconds   float64 `json:"seconds"`
	Parties   int     `json:"parties"` // dealers (Shamir) or ring parties the total covers; 0 if failed
	Err       string  `json:"err,omitempty"`
	WireBytes float64 `json:"wire_bytes_per_owner"`  // what owners put on the wire during the sum
	ProtoSent float64 `json:"proto_bytes_per_owner"` // sum messages the owners handed to Send
	// Connections after the sum: the owners' open connections counted at
	// each end (ConnEnds), the ends beyond one per remote peer
	// (DupConnEnds: a second connection between the same two hosts),
	// owner-to-owner connections, and the owner pairs the committees of
	// the sums so far join (each needs one connection).
	Prepare     float64 `json:"prepare_seconds,omitempty"` // PrepareEach: opening this sum's connections before it
	ConnEnds    int     `json:"conn_ends"`
	DupConnEnds int     `json:"duplicate_conn_ends"`
	// RelayedConnEnds are the owners' open connections through a relay:
	// a duplicate pair whose one end is relayed is a dial that fell back to
	// the relay and its direct twin, within the node's grace (closeRelayed).
	RelayedConnEnds int   `json:"relayed_conn_ends,omitempty"`
	OwnerConns      int   `json:"owner_conns"`
	CommitteePairs  int   `json:"committee_pairs"`
	PrepareFailed   int64 `json:"prepare_dials_failed"` // so far, in all prepares
	// Sessions: stream opens that waited for the peer's own dial
	// (node.Host.Expect) and got its connection, or dialled after the wait.
	ExpectMet    int64 `json:"expect_met,omitempty"`
	ExpectLapsed int64 `json:"expect_lapsed,omitempty"`
	// RelayBytes is what the data user's relay carried for owners during
	// the sum (Sim cases: ppboost_relay_bytes_total).
	RelayBytes int64 `json:"relay_bytes,omitempty"`
	// Rounds is, for a W&C session's attempts, the rounds its model
	// accepted by the session's end.
	Rounds int `json:"rounds_accepted,omitempty"`
}

type wanResult struct {
	wanCase
	Setup float64 `json:"setup_seconds"`
	// Prepare is how long the owners took to open the first sum's
	// connections (protocol.Preparer, as owners do when the roster is
	// fixed), before the first sum started; Unprepared counts the
	// connections that were still missing when the wait ended.
	Prepare    float64   `json:"prepare_seconds"`
	Unprepared int64     `json:"prepare_unfinished"`
	Sums       []wanSum  `json:"sums"`
	Skipped    int       `json:"warm_sums_skipped"` // after two failures in a row
	Punch      *wanPunch `json:"punch,omitempty"`   // NAT cases
}

// countingPoster counts the payload bytes handed to Send and Publish.
type countingPoster struct {
	protocol.Poster
	bytes *atomic.Int64
}

func (c countingPoster) Send(to protocol.PeerID, id string, data []byte) {
	c.bytes.Add(int64(len(data)))
	c.Poster.Send(to, id, data)
}

// wanHarness is a user and n owners behind emulated links: the user and
// its coordinator in this process, the owners in this process or in
// child processes (wanOwnerSet).
type wanHarness struct {
	c       wanCase
	links   wanLinks
	user    *node.Host
	owners  wanOwnerSet
	roster  []protocol.PeerID
	coord   *securesum.Coordinator
	uloop   *engine.Driver
	want    float64
	pairs   map[[2]protocol.PeerID]bool // owner pairs some committee so far joins
	rounds  map[int]bool                // rounds whose committee is in pairs
	closers []func()
}

func (h *wanHarness) close() {
	var wg sync.WaitGroup
	for i := len(h.closers) - 1; i >= 0; i-- {
		wg.Add(1)
		go func(f func()) { defer wg.Done(); f() }(h.closers[i])
	}
	wg.Wait()
}

// newWANHarness starts the hosts, connects every owner to the user, and
// waits until the user sees every owner on the control topic.
func newWANHarness(ctx context.Context, dir string, c wanCase, seed uint64) (*wanHarness, error) {
	h := &wanHarness{c: c, pairs: map[[2]protocol.PeerID]bool{}, rounds: map[int]bool{}}
	lk, closeLinks, err := newWANLinks(c, seed)
	if err != nil {
		return nil, err
	}
	h.links = lk
	h.closers = append(h.closers, closeLinks)
	log := hclog.NewNullLogger()
	p := wanParams(c)
	if h.user, err = h.links.newHost(ctx, dir, "user", c.Transport, c.Owners); err != nil {
		h.close()
		return nil, err
	}
	h.closers = append(h.closers, func() { h.user.Close() })
	h.uloop = engine.NewDriver(engine.Config{})
	h.closers = append(h.closers, func() { h.uloop.Close() })
	post := protocol.NewOutbox(h.user, 30*time.Second, log)
	h.closers = append(h.closers, post.Close)
	h.coord = securesum.NewCoordinator(securesum.PosterEnv(h.user.ID(), post, h.uloop, rng.Seeded(seed<<8), log), p)
	h.user.SetHandler(func(m protocol.Message) {
		if e, err := wire.Unmarshal(m.Data, wire.MaxSumFrameBytes); err == nil {
			h.uloop.Deliver(func() { h.coord.Handle(m.From, e) })
		}
	})
	spec := wanGroupSpec{Case: c, Seed: seed, UserID: string(h.user.ID()), UserAddrs: h.user.Addrs(),
		UserNetAddrs: wanNetAddrs(h.user.NetAddrs())}
	if err := h.startOwners(ctx, dir, spec); err != nil {
		h.close()
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := h.user.WaitTopicPeers(wctx, wire.TopicControl, c.Owners); err != nil {
		h.close()
		return nil, fmt.Errorf("control topic: %w", err)
	}
	return h, nil
}

// startOwners starts the owners (in this process, or in child processes
// for a large case), then gives every owner the roster.
func (h *wanHarness) startOwners(ctx context.Context, dir string, spec wanGroupSpec) error {
	var infos []wanOwnerInfo
	var err error
	if procs := wanProcs(h.c); procs > 0 {
		nl, ok := h.links.(netemLinks)
		if !ok {
			return fmt.Errorf("owners in child processes need emulated links, not a simulated internet")
		}
		var kids *wanChildren
		kids, infos, err = startWANChildren(nl.em, spec, procs)
		if kids != nil {
			h.owners = kids
		}
	} else {
		var g *wanGroup
		spec.Lo, spec.Hi = 0, h.c.Owners
		g, infos, err = newWANGroup(ctx, h.links, dir, spec)
		if g != nil {
			h.owners = wanLocal{g}
		}
	}
	if h.owners != nil {
		h.closers = append(h.closers, h.owners.close)
	}
	if err != nil {
		return err
	}
	for i, o := range infos {
		if err := h.links.register(wanOwnerName(i), o.NetAddrs); err != nil {
			return err
		}
		h.roster = append(h.roster, protocol.PeerID(o.ID))
		h.want += wanValue(i)[0]
	}
	slices.Sort(h.roster)
	return h.owners.setRoster(infos)
}

// wanParams are the data user's defaults for n owners (as the testnet
// sets them): the default Shamir committee of 32, or all owners when fewer.
func wanParams(c wanCase) securesum.Params {
	p := securesum.DefaultParams()
	p.Method = c.Method
	p.Committee = min(p.Committee, c.Owners)
	return p
}

// prepare has every owner open the connections the sum of round needs (see
// wanGroup.prepare) and returns the time taken and the dials unfinished.
func (h *wanHarness) prepare(ctx context.Context, round int) (float64, int64, error) {
	h.addCommittee(round)
	return h.owners.prepare(ctx, round)
}

// addCommittee adds the owner pairs that round's committee joins (a dealer
// and a member; securesum.PreparePeers) to h.pairs: the owner-to-owner
// connections the sums so far need.
func (h *wanHarness) addCommittee(round int) {
	if h.rounds[round] {
		return
	}
	h.rounds[round] = true
	com := wanCommittee(h.c, h.roster, round)
	for _, o := range h.roster {
		for _, m := range securesum.PreparePeers(o, h.roster, h.c.Method, com) {
			h.pairs[[2]protocol.PeerID{min(o, m), max(o, m)}] = true
		}
	}
}

// settle waits until the owners' wire bytes have not moved for 1.5 s
// (identify and gossipsub's subscription and mesh traffic after new
// connections, its IHAVE gossip about earlier sums), or 20 s have passed.
func (h *wanHarness) settle() {
	last, quiet := int64(-1), 0
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && quiet < 3; {
		time.Sleep(500 * time.Millisecond)
		st, err := h.owners.stats()
		if err != nil {
			return
		}
		if st.Wire == last {
			quiet++
		} else {
			last, quiet = st.Wire, 0
		}
	}
}

// wanHeader is the wire header of the sum of round.
func wanHeader(round int) *wire.Header {
	return &wire.Header{Version: wire.Version, Session: "wan", Round: uint32(round)}
}

// sum runs one secure sum and measures it.
func (h *wanHarness) sum(round int, kind string, limit time.Duration) wanSum {
	n := float64(h.c.Owners)
	s := wanSum{Kind: kind}
	if h.c.Settle {
		h.settle()
	}
	st0, err := h.owners.stats()
	if err != nil {
		s.Err = err.Error()
		return s
	}
	relay0 := h.relayed()
	h.addCommittee(round)
	type result struct {
		v       []float64
		parties int
		err     error
	}
	done := make(chan result, 1)
	hd := wanHeader(round)
	start := time.Now()
	h.uloop.Call(context.Background(), func() {
		err = h.coord.Sum(securesum.Request{Header: hd, Purpose: "err", Roster: h.roster, Length: 2, Beacon: []byte("beacon")},
			func(v []float64, parties int, err error) { done <- result{v, parties, err} })
	})
	if err != nil {
		s.Err = err.Error()
		return s
	}
	select {
	case r := <-done:
		s.Seconds = time.Since(start).Seconds()
		switch {
		case r.err != nil:
			s.Err = r.err.Error()
		case r.parties == h.c.Owners && math.Abs(r.v[0]-h.want) > n/(1<<20):
			s.Err = fmt.Sprintf("total %v, want %v", r.v[0], h.want)
		default:
			s.Parties = r.parties
		}
	case <-time.After(limit):
		s.Seconds = limit.Seconds()
		s.Err = fmt.Sprintf("no result within %v", limit)
	}
	// Bytes still in flight (acknowledgements) belong to this sum: let
	// them land before the next one starts.
	time.Sleep(2*h.c.Delay + 50*time.Millisecond)
	st1, err := h.owners.stats()
	if err != nil {
		s.Err += "; " + err.Error()
		return s
	}
	s.RelayBytes = h.relayed() - relay0
	s.WireBytes = float64(st1.Wire-st0.Wire) / n
	s.ProtoSent = float64(st1.Proto-st0.Proto) / n
	s.ConnEnds, s.DupConnEnds, s.RelayedConnEnds = st1.ConnEnds, st1.ConnEnds-st1.PeerEnds, st1.RelayedEnds
	s.OwnerConns, s.CommitteePairs, s.PrepareFailed = st1.OwnerEnds/2, len(h.pairs), st1.PrepFailed
	return s
}

// relayed is what the data user's relay has carried so far (0 but on a
// simulated internet, whose hosts have metrics).
func (h *wanHarness) relayed() int64 {
	if sl, ok := h.links.(*simLinks); ok {
		return sl.metricsOf("user").RelayedBytes()
	}
	return 0
}

// punch counts where the owner pairs of h.pairs stand (see wanPunch); nil
// but for a NAT case.
func (h *wanHarness) punch() *wanPunch {
	sl, ok := h.links.(*simLinks)
	local, ok2 := h.owners.(wanLocal)
	if !ok || !ok2 || h.c.NAT == 0 {
		return nil
	}
	var p wanPunch
	idx := map[protocol.PeerID]int{}
	for i, x := range local.hosts {
		idx[x.ID()] = i
		ok, failed := sl.metricsOf(wanOwnerName(i)).HolePunches()
		p.PunchOK += ok
		p.PunchFailed += failed
	}
	for pair := range h.pairs {
		i, j := idx[pair[0]], idx[pair[1]]
		same := sl.natOf(wanOwnerName(i)) == sl.natOf(wanOwnerName(j))
		direct, relayed := false, false
		for _, cn := range local.hosts[i].Host().Network().ConnsToPeer(local.hosts[j].Host().ID()) {
			if _, err := cn.RemoteMultiaddr().ValueForProtocol(ma.P_CIRCUIT); err == nil {
				relayed = true
			} else {
				direct = true
			}
		}
		switch {
		case same:
			p.SameNAT++
			if direct {
				p.SameNATDir++
			}
		default:
			p.Pairs++
			if direct {
				p.Direct++
			} else if relayed {
				p.Relayed++
			}
		}
		if !direct && !relayed {
			p.Unconnected++
		}
	}
	return &p
}

// burn keeps every core busy until stop is closed.
func burn(stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 1.0
			for i := 0; ; i++ {
				x = x*1.0000001 + 1e-9
				if i%(1<<16) == 0 {
					select {
					case <-stop:
						_ = x
						return
					default:
					}
				}
			}
		}()
	}
	return &wg
}

// runWANCase runs one case; logf (if not nil) is told each step as it ends.
func runWANCase(ctx context.Context, c wanCase, seed uint64, logf func(string, ...any)) (wanResult, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	res := wanResult{wanCase: c}
	if c.Method == wanSessionMethod {
		var err error
		res.Sums, err = runWANSession(ctx, c, seed)
		return res, err
	}
	if c.Method == wanFedMethod {
		var err error
		res.Sums, err = runWANFed(ctx, c, seed)
		return res, err
	}
	dir, err := os.MkdirTemp("", "ppboost-wan-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	var stop chan struct{}
	if c.Load {
		stop = make(chan struct{})
		wg := burn(stop)
		defer func() { close(stop); wg.Wait() }()
	}
	t0 := time.Now()
	h, err := newWANHarness(ctx, dir, c, seed)
	if err != nil {
		return res, err
	}
	defer h.close()
	res.Setup = time.Since(t0).Seconds()
	logf("  %d owners up in %d processes in %.1f s", c.Owners, max(wanProcs(c), 1), res.Setup)
	if res.Prepare, res.Unprepared, err = h.prepare(ctx, 1); err != nil {
		return res, err
	}
	logf("  first sum's connections opened in %.1f s (%d dials unfinished)", res.Prepare, res.Unprepared)
	if c.Sim && c.NAT > 0 {
		time.Sleep(punchSettle)
		if res.Punch = h.punch(); res.Punch != nil {
			p := res.Punch
			logf("  after %v: %d/%d owner pairs behind different NATs direct (%.0f%%), %d relayed, %d unconnected; %d/%d on one LAN direct; hole punches %d ok, %d failed; relay carried %d bytes so far",
				punchSettle, p.Direct, p.Pairs, 100*p.Fraction(), p.Relayed, p.Unconnected, p.SameNATDir, p.SameNAT, p.PunchOK, p.PunchFailed, h.relayed())
		}
	}
	// A sum that has not finished after its bound plus every timeout and
	// re-form the coordinator may take is abandoned.
	p := wanParams(c)
	limit := time.Duration(wanBound(c.Method, c.Owners))*c.Delay*3 +
		time.Duration(p.MaxReforms+2)*(p.Timeout+p.PingTimeout+time.Duration(2*c.Owners)*p.HopTimeout)*2 + 30*time.Second
	sum := func(round int, kind string) wanSum {
		var prep float64
		if c.PrepareEach {
			kind += "+prep"
			if round > 1 {
				var left int64
				if prep, left, err = h.prepare(ctx, round); err != nil {
					return wanSum{Kind: kind, Err: err.Error()}
				}
				logf("  sum %d's connections opened in %.1f s (%d dials unfinished)", round, prep, left)
			}
		}
		s := h.sum(round, kind, limit)
		s.Prepare = prep
		logf("  %s sum: %.2f s, %d/%d dealers, %d owner connections for %d committee pairs, %d duplicate ends, %d prepare dials failed so far, relay carried %d bytes %s",
			kind, s.Seconds, s.Parties, c.Owners, s.OwnerConns, s.CommitteePairs, s.DupConnEnds, s.PrepareFailed, s.RelayBytes, s.Err)
		return s
	}
	res.Sums = append(res.Sums, sum(1, "first"))
	for i := range c.Warm {
		s := sum(2+i, "warm")
		res.Sums = append(res.Sums, s)
		if s.Err != "" && res.Sums[len(res.Sums)-2].Err != "" {
			// Two failures in a row: the rest would fail the same way,
			// each after the coordinator's full round of timeouts.
			res.Skipped = c.Warm - i - 1
			break
		}
	}
	if c.Steady > 0 {
		next := 2 + c.Warm
		for range steadyWarmup {
			h.sum(next, "warm-up", limit)
			next++
		}
		for range c.Steady {
			res.Sums = append(res.Sums, sum(next, "steady"))
			next++
		}
	}
	return res, nil
}

// wanGrid is the list of cases of a run.
func wanGrid(short bool) []wanCase {
	transports := []string{"tcp", "quic"}
	owners := []int{20, 60, 200}
	delays := []time.Duration{0, 25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}
	// Warm sums per case: their median is the row's time. A warm Shamir
	// sum costs about a second, or 30 s when it fails (the coordinator's
	// timeouts); a ring of 200 owners at 100 ms costs 40 s (its bound is
	// 401 one-way delays), so one there.
	warmOf := func(m string, n int) int {
		switch {
		case short:
			return 1
		case m == securesum.Shamir && n >= 200:
			return 2
		case m == securesum.Shamir:
			return 3
		case n >= 200:
			return 1
		}
		return 2
	}
	if short {
		owners, delays = []int{6}, []time.Duration{0, 20 * time.Millisecond}
	}
	var out []wanCase
	for _, tr := range transports {
		for _, n := range owners {
			for _, m := range []string{securesum.Shamir, securesum.Ring} {
				for _, d := range delays {
					out = append(out, wanCase{Transport: tr, Owners: n, Method: m, Delay: d, Warm: warmOf(m, n)})
				}
			}
		}
	}
	// Short sessions (training with Shamir share sums), for the smaller
	// owner counts.
	sessionOwners := []int{20, 60}
	if short {
		sessionOwners = []int{16}
	}
	sessionTransports := transports
	if short {
		sessionTransports = transports[:1]
	}
	for _, tr := range sessionTransports {
		for _, n := range sessionOwners {
			for _, d := range delays {
				out = append(out, wanCase{Transport: tr, Owners: n, Method: wanSessionMethod, Delay: d})
			}
		}
	}
	// The goal's setting on a loaded machine: the largest Shamir case at
	// the largest delay, beside its own 0 ms run under the same load.
	n, d := owners[len(owners)-1], delays[len(delays)-1]
	if short {
		transports = transports[:1]
	}
	for _, tr := range transports {
		for _, dd := range []time.Duration{0, d} {
			out = append(out, wanCase{Transport: tr, Owners: n, Method: securesum.Shamir, Delay: dd, Warm: warmOf(securesum.Shamir, n), Load: true})
		}
	}
	return out
}

// wanRow is one line of the table: one kind of sum (first or warm) of
// one case, beside the same at 0 ms.
type wanRow struct {
	Transport string    `json:"transport"`
	Owners    int       `json:"owners"`
	Method    string    `json:"method"`
	Load      bool      `json:"load"`
	Kind      string    `json:"kind"`
	DelayMS   float64   `json:"delay_ms"`
	Seconds   float64   `json:"seconds"`   // first: its time; warm: the median warm sum
	Seconds0  nullFloat `json:"seconds_0"` // the same at 0 ms
	Added     nullFloat `json:"added_delays"`
	Bound     int       `json:"bound_delays"`
	Ratio     nullFloat `json:"added_over_bound"`
	Excluded  int       `json:"dealers_excluded"` // honest owners the total does not cover (worst sum)
	Failed    int       `json:"failed"`
	WireBytes float64   `json:"wire_bytes_per_owner"`
	ProtoB    float64   `json:"proto_bytes_per_owner"`
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// wanRows turns results into rows; every case needs its 0 ms twin.
func wanRows(results []wanResult) []wanRow {
	type k struct {
		tr, m, kind string
		n           int
		load        bool
		d           time.Duration
	}
	row := map[k]wanRow{}
	var order []k
	for _, r := range results {
		for _, kind := range []string{"first", "warm", "steady", "first+prep", "warm+prep", "session-first", "session-warm"} {
			var secs, wire, proto []float64
			excl, failed := 0, 0
			for _, s := range r.Sums {
				if s.Kind != kind {
					continue
				}
				if s.Err != "" {
					failed++
					excl = r.Owners
				} else {
					excl = max(excl, r.Owners-s.Parties)
				}
				secs, wire, proto = append(secs, s.Seconds), append(wire, s.WireBytes), append(proto, s.ProtoSent)
			}
			if len(secs) == 0 {
				continue
			}
			kk := k{r.Transport, r.Method, kind, r.Owners, r.Load, r.Delay}
			order = append(order, kk)
			row[kk] = wanRow{Transport: r.Transport, Owners: r.Owners, Method: r.Method, Load: r.Load, Kind: kind,
				DelayMS: float64(r.Delay) / 1e6, Seconds: median(secs), Bound: wanBound(r.Method, r.Owners),
				Excluded: excl, Failed: failed, WireBytes: median(wire), ProtoB: median(proto)}
		}
	}
	out := make([]wanRow, 0, len(order))
	for _, kk := range order {
		w := row[kk]
		z := kk
		z.d = 0
		w.Seconds0, w.Added, w.Ratio = nullFloat(math.NaN()), nullFloat(math.NaN()), nullFloat(math.NaN())
		if b, ok := row[z]; ok {
			w.Seconds0 = nullFloat(b.Seconds)
			// A failed sum's time is the coordinator's timeouts, and one
			// that left owners out waited for them: neither is latency, so
			// no added latency is computed from one.
			if kk.d > 0 && w.Failed == 0 && b.Failed == 0 && w.Excluded == 0 && b.Excluded == 0 {
				added := (w.Seconds - b.Seconds) / kk.d.Seconds()
				w.Added, w.Ratio = nullFloat(added), nullFloat(added/float64(w.Bound))
			}
		}
		out = append(out, w)
	}
	return out
}

// runWAN runs the cases of grid and writes wan/NAME.csv and .json and the
// plots wan/NAME-*.
func runWAN(r *Run, name string, grid []wanCase) error {
	seed := uint64(1)
	if len(r.Seeds) > 0 {
		seed = r.Seeds[0]
	}
	ctx := context.Background()
	r.Progress.Start(name, len(grid))
	start := time.Now()
	var results []wanResult
	for i, c := range grid {
		res, err := runWANCase(ctx, c, seed+uint64(i)*1000, r.Logf)
		if err != nil {
			return fmt.Errorf("wan %s %d owners %s %v load=%v: %w", c.Transport, c.Owners, c.Method, c.Delay, c.Load, err)
		}
		results = append(results, res)
		r.Logf("%s", wanLogLine(res))
		r.Progress.Step()
	}
	wall := time.Since(start)
	r.Logf("wan: %d cases in %v", len(grid), wall.Round(time.Second))
	return wanWrite(r, name, seed, wall.Seconds(), results)
}

// wanLogLine is a case's progress line: its sums, and for secure sums the
// owner-to-owner connections after each against the pairs the committees
// so far join.
func wanLogLine(res wanResult) string {
	c := res.wanCase
	line := fmt.Sprintf("wan %-4s n=%-3d %-6s d=%-5v load=%-5v procs=%d setup %5.1fs", c.Transport, c.Owners, c.Method, c.Delay, c.Load, wanProcs(c), res.Setup)
	if c.Method != wanSessionMethod {
		line += fmt.Sprintf(" prepare %.1fs (%d unfinished)", res.Prepare, res.Unprepared)
	}
	for _, s := range res.Sums {
		line += fmt.Sprintf(" | %s %.2fs %d/%d", s.Kind, s.Seconds, s.Parties, c.Owners)
		if c.Method != wanSessionMethod {
			line += fmt.Sprintf(" conns %d pairs %d dup %d", s.OwnerConns, s.CommitteePairs, s.DupConnEnds)
		}
		if s.Err != "" {
			line += " FAILED: " + s.Err
		}
	}
	if res.Skipped > 0 {
		line += fmt.Sprintf(" | %d warm skipped", res.Skipped)
	}
	return line
}

// wanWrite writes the table, the JSON (with every case) and the plots.
func wanWrite(r *Run, name string, seed uint64, wall float64, results []wanResult) error {
	rows := wanRows(results)
	header := []string{"transport", "owners", "method", "load", "kind", "delay_ms", "seconds", "seconds_0ms", "added_delays",
		"bound_delays", "added_over_bound", "dealers_excluded", "failed", "wire_bytes_per_owner", "proto_bytes_per_owner", "wire_over_proto"}
	var cells [][]string
	for _, w := range rows {
		cells = append(cells, []string{w.Transport, fmt.Sprint(w.Owners), w.Method, fmt.Sprint(w.Load), w.Kind, F(w.DelayMS),
			F(w.Seconds), F(float64(w.Seconds0)), F(float64(w.Added)), fmt.Sprint(w.Bound), F(float64(w.Ratio)), fmt.Sprint(w.Excluded), fmt.Sprint(w.Failed),
			F(w.WireBytes), F(w.ProtoB), ratio(w.WireBytes, w.ProtoB)})
	}
	if err := r.Table("wan/"+name, header, cells); err != nil {
		return err
	}
	if err := r.JSON("wan/"+name, map[string]any{"short": r.Short, "seed": seed, "wall_seconds": wall,
		"note": "latency bound = depth of the protocol's message chain in one-way delays: Shamir 5, ring 2n+1, session 5 per round attempt (experiment/wan.go, wan_session.go)",
		"rows": rows, "cases": results}); err != nil {
		return err
	}
	return wanPlots(r, name, rows)
}

func wanPlots(r *Run, name string, rows []wanRow) error {
	prefix := "wan/"
	if name != "wan" {
		prefix = "wan/" + name + "-"
	}
	tag := ""
	if r.Short {
		tag = " (SHORT RUN: numbers mean nothing)"
	}
	var delays []float64
	for _, w := range rows {
		if !slices.Contains(delays, w.DelayMS) && w.DelayMS > 0 {
			delays = append(delays, w.DelayMS)
		}
	}
	slices.Sort(delays)
	for _, tr := range []string{"tcp", "quic"} {
		for _, m := range []string{securesum.Shamir, securesum.Ring, wanSessionMethod} {
			if err := wanPlotAdded(r, prefix, tag, tr, m, rows, delays); err != nil {
				return err
			}
		}
	}
	if err := wanPlotTime(r, prefix, tag, rows, delays); err != nil {
		return err
	}
	return wanPlotBytes(r, prefix, tag, rows, delays)
}

// wanLine is a horizontal dashed line at y over xs.
func wanLine(name string, xs []float64, y float64) Series {
	s := Series{Name: name, Dashed: true, NoPoint: true}
	for _, x := range xs {
		s.X, s.Y = append(s.X, x), append(s.Y, y)
	}
	return s
}

// wanSeriesByOwners draws one series per owner count (in the order rows
// first name them) of the rows keep accepts: the delay against y.
func wanSeriesByOwners(rows []wanRow, keep func(wanRow) bool, name func(n int) string, y func(wanRow) float64) []Series {
	byN := map[int]*Series{}
	var ns []int
	for _, w := range rows {
		if !keep(w) {
			continue
		}
		s, ok := byN[w.Owners]
		if !ok {
			s = &Series{Name: name(w.Owners)}
			byN[w.Owners] = s
			ns = append(ns, w.Owners)
		}
		s.X, s.Y = append(s.X, w.DelayMS), append(s.Y, y(w))
	}
	out := make([]Series, 0, len(ns))
	for _, n := range ns {
		out = append(out, *byN[n])
	}
	return out
}

// wanPlotAdded plots the latency added over its bound against the delay,
// for one transport and method, per owner count and kind of sum, with the
// goals; nothing when the run has no such rows.
func wanPlotAdded(r *Run, prefix, tag, tr, m string, rows []wanRow, delays []float64) error {
	f := Figure{Title: fmt.Sprintf("%s, %s: latency added / bound (y clipped to [-1, 6])%s", m, tr, tag), X: "one-way delay d (ms)",
		Y: "(t_d - t_0) / (bound x d)", YMin: -1, YMax: 6}
	kinds := []string{"first", "warm", "first+prep", "warm+prep"}
	if m == wanSessionMethod {
		kinds = []string{"session-first", "session-warm"}
	}
	for _, kind := range kinds {
		keep := func(w wanRow) bool {
			return w.Transport == tr && w.Method == m && w.Kind == kind && !w.Load && w.DelayMS > 0
		}
		label := func(n int) string { return fmt.Sprintf("%s n=%d", strings.TrimPrefix(kind, "session-"), n) }
		f.Series = append(f.Series, wanSeriesByOwners(rows, keep, label, func(w wanRow) float64 { return float64(w.Ratio) })...)
	}
	if len(f.Series) == 0 {
		return nil // not in this run's grid
	}
	// From 0 ms, so that a run with one delay still shows the goals.
	span := append([]float64{0}, delays...)
	f.Series = append(f.Series, wanLine("goal warm 1.5", span, 1.5), wanLine("goal first 3", span, 3))
	return r.Plot(prefix+"added-"+tr+"-"+m, f)
}

// wanCompleteShamir keeps the idle Shamir rows of tr and kind whose sums
// all covered every owner.
func wanCompleteShamir(tr, kind string) func(wanRow) bool {
	return func(w wanRow) bool {
		return w.Transport == tr && w.Method == securesum.Shamir && w.Kind == kind && !w.Load && w.Failed == 0 && w.Excluded == 0
	}
}

// wanPlotTime plots the time of a warm Shamir sum against the delay, TCP
// and QUIC, with the bound of 5 one-way delays.
func wanPlotTime(r *Run, prefix, tag string, rows []wanRow, delays []float64) error {
	f := Figure{Title: "warm Shamir sum time (failed or incomplete sums not drawn)" + tag, X: "one-way delay (ms)", Y: "seconds"}
	for _, tr := range []string{"tcp", "quic"} {
		label := func(n int) string { return fmt.Sprintf("%s n=%d", tr, n) }
		f.Series = append(f.Series, wanSeriesByOwners(rows, wanCompleteShamir(tr, "warm"), label, func(w wanRow) float64 { return w.Seconds })...)
	}
	bound := Series{Name: "bound 5d", Dashed: true, NoPoint: true}
	for _, d := range append([]float64{0}, delays...) {
		bound.X, bound.Y = append(bound.X, d), append(bound.Y, 5*d/1000)
	}
	f.Series = append(f.Series, bound)
	return r.Plot(prefix+"shamir-time", f)
}

// wanPlotBytes plots the wire bytes per owner of a warm Shamir sum over
// the protocol's (and of a steady one, when the run has them), against the
// delay, with issue 31's goal of 1.5.
func wanPlotBytes(r *Run, prefix, tag string, rows []wanRow, delays []float64) error {
	b := Figure{Title: "wire / protocol bytes per owner, warm Shamir sum (complete sums only)" + tag, X: "one-way delay (ms)",
		Y: "wire bytes / protocol bytes", LogY: true}
	for _, tr := range []string{"tcp", "quic"} {
		for _, kind := range []string{"warm", "steady"} {
			complete := wanCompleteShamir(tr, kind)
			keep := func(w wanRow) bool { return complete(w) && w.ProtoB > 0 }
			label := func(n int) string {
				if kind == "steady" {
					return fmt.Sprintf("%s n=%d, past MTU probes", tr, n)
				}
				return fmt.Sprintf("%s n=%d", tr, n)
			}
			b.Series = append(b.Series, wanSeriesByOwners(rows, keep, label, func(w wanRow) float64 { return w.WireBytes / w.ProtoB })...)
		}
	}
	b.Series = append(b.Series, wanLine("goal 1.5", append([]float64{0}, delays...), 1.5))
	return r.Plot(prefix+"bytes", b)
}

// nullFloat is a float64 that is JSON null when NaN (a case without its
// 0 ms twin, or at 0 ms itself), which encoding/json refuses.
type nullFloat float64

func (f nullFloat) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

func (f *nullFloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = nullFloat(math.NaN())
		return nil
	}
	return json.Unmarshal(b, (*float64)(f))
}

// ratio is a/b for a table cell, empty when b is 0 (sessions do not count
// protocol bytes).
func ratio(a, b float64) string {
	if b == 0 {
		return ""
	}
	return F(a / b)
}

package conformance

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
	"github.com/ppboost/ppboost/protocol/wire"
)

// The data user coordinates every secure sum and is untrusted. These
// subtests play a coordinator that deviates to learn one owner's value (a
// ring of one, a dealer set of one, a threshold of one, a committee of its
// choosing) and check that no owner sends anything that would reveal it.

// deviant publishes hand-made sum requests from the user peer.
type deviant struct {
	sc  *sumCluster
	seq uint64
}

func (d *deviant) header() *wire.Header {
	d.seq++
	return &wire.Header{Version: wire.Version, Session: d.sc.session, Round: 1, Seq: d.seq}
}

func (d *deviant) publish(t *testing.T, body *wire.SumStart) *wire.Header {
	h := d.header()
	raw, err := wire.Marshal(&wire.Envelope{Header: h, Body: &wire.Envelope_SumStart{SumStart: body}}, wire.MaxControlBytes)
	if err != nil {
		t.Fatal(err)
	}
	d.sc.c.User().Post.Publish(wire.TopicControl, raw)
	return h
}

func (d *deviant) send(t *testing.T, to protocol.PeerID, h *wire.Header, m *wire.Sum) {
	hh := proto.Clone(h).(*wire.Header)
	d.seq++
	hh.Seq = d.seq
	raw, err := wire.Marshal(&wire.Envelope{Header: hh, Body: &wire.Envelope_Sum{Sum: m}}, wire.MaxSumFrameBytes)
	if err != nil {
		t.Fatal(err)
	}
	d.sc.c.User().Post.Send(to, wire.ProtoShamir, raw)
}

func (sc *sumCluster) count(k wire.Sum_Kind) int {
	sc.seenMu.Lock()
	defer sc.seenMu.Unlock()
	return sc.seen[k]
}

func bitmapOf(n int, members ...int) []byte {
	b := make([]byte, (n+7)/8)
	for _, i := range members {
		b[i/8] |= 1 << (i % 8)
	}
	return b
}

func testDeviatingCoordinator(t *testing.T, h Harness) {
	n := min(8, h.MaxOwners())
	settle := func(c Cluster) { c.Run(func() bool { return false }, 1000*c.Scale()) }
	ringCase := func(name string, play func(t *testing.T, c Cluster, d *deviant, sc *sumCluster)) {
		t.Run(name, func(t *testing.T) {
			c := h.Start(t, n)
			vals, _ := values(n)
			sc := newSumCluster(t, c, testParams("ring", n), vals)
			play(t, c, &deviant{sc: sc}, sc)
		})
	}
	ringCase("ring-of-one", func(t *testing.T, c Cluster, d *deviant, sc *sumCluster) {
		all := make([]int, 0, n)
		for i := 1; i < n; i++ {
			all = append(all, i)
		}
		// Everyone but party 0 excluded: its "total" would be its value.
		d.publish(t, &wire.SumStart{Purpose: "err", Method: "ring", Length: 2, Excluded: bitmapOf(n, all...)})
		// And a ring of two: each would learn the other's value.
		d.publish(t, &wire.SumStart{Purpose: "wsum", Method: "ring", Length: 2, Excluded: bitmapOf(n, all[1:]...)})
		settle(c)
		if got := sc.count(wire.Sum_RING_TOTAL) + sc.count(wire.Sum_RING_FORWARD); got != 0 {
			t.Fatalf("a ring of one or two produced %d ring messages at the user", got)
		}
	})
	// A ring completes (its total reaches the user); the user then opens
	// the same sum again without party 0 and would subtract the totals.
	// Every party saw the first ring's backward pass, so none takes part
	// again and no second total arrives.
	ringCase("ring-reopened", func(t *testing.T, c Cluster, d *deviant, sc *sumCluster) {
		d.publish(t, &wire.SumStart{Purpose: "err", Method: "ring", Length: 2})
		if !c.Run(func() bool { return sc.count(wire.Sum_RING_TOTAL) >= 1 }, 5000*c.Scale()) {
			t.Fatal("the first ring did not complete")
		}
		d.publish(t, &wire.SumStart{Purpose: "err", Instance: 1, Method: "ring", Length: 2, Excluded: bitmapOf(n, 0)})
		settle(c)
		if got := sc.count(wire.Sum_RING_TOTAL); got != 1 {
			t.Fatalf("%d ring totals reached the user; a re-opened ring must give none", got)
		}
	})
	shamirCase := func(t *testing.T, name string, play func(t *testing.T, d *deviant, sc *sumCluster, parts []protocol.PeerID, com []protocol.PeerID, tt int)) {
		t.Run(name, func(t *testing.T) {
			c := h.Start(t, n)
			p := testParams("shamir", n)
			vals, _ := values(n)
			sc := newSumCluster(t, c, p, vals)
			d := &deviant{sc: sc}
			h := &wire.Header{Version: wire.Version, Session: sc.session, Round: 1}
			com := securesum.Committee(sc.roster, p.Committee, sumBeacon, h, "err", 0)
			play(t, d, sc, sc.roster, com, p.ThresholdFor(len(com)))
		})
	}
	start := func(com []protocol.PeerID, tt int) *wire.SumStart {
		s := &wire.SumStart{Purpose: "err", Method: "shamir", Length: 2, Threshold: uint32(tt)}
		for _, m := range com {
			s.Committee = append(s.Committee, string(m))
		}
		return s
	}
	shamirCase(t, "wrong-threshold", func(t *testing.T, d *deviant, sc *sumCluster, parts, com []protocol.PeerID, tt int) {
		d.publish(t, start(com, 1)) // t = 1: one member's share would be a dealer's value
		settle(sc.c)
		if got := sc.count(wire.Sum_SHAMIR_HOLDING); got != 0 {
			t.Fatalf("%d members dealt with threshold 1 (holding reports seen)", got)
		}
	})
	shamirCase(t, "biased-committee", func(t *testing.T, d *deviant, sc *sumCluster, parts, com []protocol.PeerID, tt int) {
		// The user's own choice of members (here: the last t parties).
		mine := parts[len(parts)-tt:]
		if slices.Equal(mine, com) {
			mine = parts[:tt]
		}
		d.publish(t, start(mine, tt))
		settle(sc.c)
		if got := sc.count(wire.Sum_SHAMIR_HOLDING); got != 0 {
			t.Fatalf("%d members dealt to a committee the beacon does not give", got)
		}
	})
	shamirCase(t, "singleton-dealer-set", func(t *testing.T, d *deviant, sc *sumCluster, parts, com []protocol.PeerID, tt int) {
		h := d.publish(t, start(com, tt))
		// Honest dealing: every member reports holding every share.
		if !sc.c.Run(func() bool { return sc.count(wire.Sum_SHAMIR_HOLDING) >= len(com) }, 5000*sc.c.Scale()) {
			t.Fatalf("only %d of %d members reported holdings", sc.count(wire.Sum_SHAMIR_HOLDING), len(com))
		}
		// Q = {party 0} to every member: t partials would be party 0's value.
		for _, m := range com {
			d.send(t, m, h, &wire.Sum{Kind: wire.Sum_SHAMIR_DEALERS, Purpose: "err", Dealers: bitmapOf(len(parts), 0)})
		}
		// Q of MinParties-1 dealers: still too small.
		for _, m := range com {
			d.send(t, m, h, &wire.Sum{Kind: wire.Sum_SHAMIR_DEALERS, Purpose: "err", Dealers: bitmapOf(len(parts), 0, 1)})
		}
		settle(sc.c)
		if got := sc.count(wire.Sum_SHAMIR_PARTIAL); got != 0 {
			t.Fatalf("%d partial sums over a dealer set of one or two", got)
		}
	})
}

// testOutsiders runs a session with admission while outsiders try to join
// (one with a fat Join), flood an owner with secure-sum frames for
// instances that have not started, and publish out-of-range shares. The
// session must finish with the reference model, the outsiders outside the
// roster, and their traffic dropped and counted.
func testOutsiders(t *testing.T, h Harness) {
	n := min(6, h.MaxOwners())
	c := h.Start(t, n)
	outsider, fat := c.Extra(t), c.Extra(t)
	data := sessionData(t, n, 20)
	cfg := boost.DefaultConfig()
	cfg.Mechanism, cfg.OwnersPerRound, cfg.Rounds, cfg.Alpha = "none", 2, 2, boost.AlphaSecureSum
	admitted := map[protocol.PeerID]bool{}
	for _, o := range c.Owners() {
		admitted[o.ID] = true
	}
	sum := sumParams(c, "shamir", n)
	s := startSession(t, c, cfg, sum, data, func(p protocol.PeerID) bool { return admitted[p] })
	hdr := func() *wire.Header {
		return &wire.Header{Version: wire.Version, Session: "conformance", Seq: uint64(time.Now().UnixNano())}
	}
	join := func(p Peer, addrs []string) {
		nonce := make([]byte, session.NonceBytes)
		raw, _ := wire.Marshal(&wire.Envelope{Header: hdr(), Body: &wire.Envelope_Join{Join: &wire.Join{
			SchemaDigest: data.Owners[0].Schema.Digest(), Nonce: nonce, Addrs: addrs}}}, wire.MaxControlBytes)
		p.Post.Send(c.User().ID, wire.ProtoSession, raw)
	}
	join(outsider, []string{"/ip4/127.0.0.1/tcp/1"})
	big := make([]string, 16)
	for i := range big {
		big[i] = strings.Repeat("x", 60<<10)
	}
	join(fat, big)
	// A flood of sum frames for future rounds at one owner.
	victim := sortedOwners(c)[0].ID // s.owners[0]
	for i := 0; i < 200; i++ {
		h := hdr()
		h.Round = uint32(10 + i)
		raw, _ := wire.Marshal(&wire.Envelope{Header: h, Body: &wire.Envelope_Sum{Sum: &wire.Sum{Kind: wire.Sum_SHAMIR_SHARE,
			Purpose: "err", X: 1, Values: make([]uint64, 4000)}}}, wire.MaxSumFrameBytes)
		outsider.Post.Send(victim, wire.ProtoShamir, raw)
	}
	// Out-of-range shares on the shares topic.
	raw, _ := wire.Marshal(&wire.Envelope{Header: hdr(), Body: &wire.Envelope_Share{Share: &wire.Share{
		Values: []float64{1e12, -1e12}}}}, wire.MaxShareBytes)
	outsider.Post.Publish(wire.TopicShares, raw)

	if !c.Run(s.finished, min(200000*c.Scale(), 3*time.Minute)) {
		st, err := s.user.State()
		t.Fatalf("session did not finish with outsiders around: user %s, %v", st, err)
	}
	if s.err != nil {
		t.Fatalf("session failed with outsiders around: %v", s.err)
	}
	ref, err := boost.Train(cfg, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameModel(t, ref, s.model)
	if got := s.user.Joined(); got != n {
		t.Fatalf("%d peers joined, want the %d admitted owners", got, n)
	}
	// The flood is sent asynchronously and may still be arriving.
	flooded := func() bool { return s.owners[0].Stats().Get("sum: not a participant") > 0 }
	if !c.Run(flooded, 5000*c.Scale()) {
		t.Fatalf("the flood was not dropped and counted at the owner: %v", s.owners[0].Stats())
	}
}

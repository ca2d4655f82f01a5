package session

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// A data user that completed round 1's err sum re-opens it as a new
// instance without owner 0: the two totals would differ by owner 0's pair
// (sum w miss, sum w). Shamir err and weight sums are single-instance, so
// no owner deals in the re-opened instance (the first one is checked to be
// observed: its dealings are counted too). The same play with a
// distributed-privacy share sum is covered by the conformance subtest
// ShareSumIsDealtOnce.
func TestReopenedErrSumIsNotDealtAgain(t *testing.T) {
	// The user holds back Alpha and Final, so the owners stay in the
	// session after the err sum's total.
	c := newCluster(t, 8, func(cfg *boost.Config, p *securesum.Params) { p.Method = securesum.Shamir; cfg.Rounds = 1 })
	c.w.drop = func(m msg) bool { // hold back everything after the err sum's total: the session stays open
		e := m.env()
		return m.from == userID && e != nil && (e.GetAlpha() != nil || e.GetFinal() != nil)
	}
	c.startUser(t, nil)
	c.run(20 * time.Second)
	var start *wire.Envelope
	for _, m := range c.w.log {
		if e := m.env(); e != nil && e.GetSumStart().GetPurpose() == PurposeErr {
			start = e
			break
		}
	}
	if start == nil {
		t.Fatal("no err sum started")
	}
	roster := c.user.roster
	excluded := make([]byte, (len(roster.IDs)+7)/8)
	excluded[0] = 1
	parts := roster.IDs[1:]
	h := start.GetHeader()
	next := start.GetSumStart().GetInstance() + 1
	com := securesum.Committee(parts, c.sum.Committee, roster.Beacon, h, PurposeErr, next)
	ss := &wire.SumStart{Purpose: PurposeErr, Instance: next, Method: securesum.Shamir, Length: 2,
		RosterVersion: roster.Version, Excluded: excluded, Threshold: uint32(c.sum.ThresholdFor(len(com)))}
	for _, m := range com {
		ss.Committee = append(ss.Committee, string(m))
	}
	h2 := proto.Clone(h).(*wire.Header)
	h2.Seq += 1000
	raw, err := wire.Marshal(&wire.Envelope{Header: h2, Body: &wire.Envelope_SumStart{SumStart: ss}}, wire.MaxControlBytes)
	if err != nil {
		t.Fatal(err)
	}
	dealtIn := func(from int, instance uint32) (n int) {
		for _, m := range c.w.log[from:] {
			if e := m.env(); e != nil && e.GetSum().GetKind() == wire.Sum_SHAMIR_SHARE && e.GetSum().GetInstance() == instance {
				n++
			}
		}
		return n
	}
	if dealtIn(0, start.GetSumStart().GetInstance()) == 0 {
		t.Fatal("the first instance's dealings were not observed")
	}
	before := len(c.w.log)
	poster{transport{c.w, userID}}.Publish(wire.TopicControl, raw)
	c.w.advance(time.Second)
	if dealt := dealtIn(before, next); dealt != 0 {
		t.Fatalf("%d Shamir shares dealt in a re-opened instance of a completed err sum", dealt)
	}
}

// An owner started with NoRing stays out of ring sessions and says why; it
// joins Shamir sessions as usual.
func TestNoRingOwnerRefusesRingSessions(t *testing.T) {
	for _, method := range []string{securesum.Ring, securesum.Shamir} {
		c := newCluster(t, 8, func(cfg *boost.Config, p *securesum.Params) { p.Method, cfg.Rounds = method, 1 })
		c.owners[0].cfg.NoRing = true
		c.startUser(t, nil)
		c.run(time.Minute)
		if !c.done || c.err != nil {
			t.Fatalf("%s: done %v, err %v", method, c.done, c.err)
		}
		inRoster := false
		for _, id := range c.user.roster.IDs {
			inRoster = inRoster || id == c.ids[0]
		}
		if inRoster != (method == securesum.Shamir) {
			t.Fatalf("%s session: the NoRing owner in the roster: %v", method, inRoster)
		}
		if why := c.user.notJoined[c.ids[0]]; method == securesum.Ring && !strings.Contains(why, "rings") {
			t.Fatalf("ring session: the owner's refusal says %q", why)
		}
	}
}

// A data user announcing a distributed-privacy configuration an owner must
// not accept is refused with the reason: ncc (no aggregate to sum), a clip
// that is not a positive finite number, a drop fraction outside [0, 1), a
// dealer floor above the owners selected per round, ring sums, an unknown
// privacy mode. A sound one parses, with the floor and honest count both
// sides derive: one honest dealer by default (colluders all), floor - c
// with c colluders.
func TestDistributedConfigChecks(t *testing.T) {
	base := func() (boost.Config, securesum.Params) {
		cfg := boost.DefaultConfig()
		cfg.Privacy, cfg.OwnersPerRound, cfg.Epsilon = boost.PrivacyDistributed, 20, 1
		return cfg, securesum.DefaultParams()
	}
	cfg, p := base()
	spec, err := cfg.Spec(2, 4, boost.PerFeature([]float64{0, 0, 0, 0}))
	if err != nil {
		t.Fatal(err)
	}
	w := WireConfig(cfg, spec, p, DefaultTiming(), "")
	got, _, err := ParseWireConfig(w)
	if err != nil {
		t.Fatalf("sound configuration refused: %v", err)
	}
	if !got.Distributed() || got.Floor != 18 || got.Honest != 1 || got.Clip != cfg.PrivacyClip || got.Colluders != boost.ColludersAll {
		t.Fatalf("parsed spec: distributed %v floor %d honest %d clip %v colluders %d", got.Distributed(), got.Floor, got.Honest, got.Clip, got.Colluders)
	}
	trusting := proto.Clone(w).(*wire.SessionConfig)
	trusting.Colluders = 1
	if got, _, err := ParseWireConfig(trusting); err != nil || got.Honest != 17 {
		t.Fatalf("one colluder: honest %d, err %v; want 17", got.Honest, err)
	}
	for _, c := range []struct {
		name, want string
		mutate     func(*wire.SessionConfig)
	}{
		{"ncc", "distributed privacy", func(w *wire.SessionConfig) { w.Learner = "ncc" }},
		{"clip", "distributed privacy", func(w *wire.SessionConfig) { w.PrivacyClip = math.Inf(1) }},
		{"drop", "distributed privacy", func(w *wire.SessionConfig) { w.DropFraction = 1.5 }},
		{"floor", "only 2 owners are selected", func(w *wire.SessionConfig) { w.OwnersPerRound = 2 }},
		{"ring", "needs Shamir", func(w *wire.SessionConfig) { w.SumMethod = securesum.Ring }},
		{"mode", "unknown privacy", func(w *wire.SessionConfig) { w.Privacy = "central" }},
	} {
		bad := proto.Clone(w).(*wire.SessionConfig)
		c.mutate(bad)
		_, _, err := ParseWireConfig(bad)
		if err == nil || !errors.Is(err, protocol.ErrBadConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want a bad-config error mentioning %q", c.name, err, c.want)
		}
	}
}

// The colluder bound is the owner's (issue 19 item 3): a data user that
// announces one colluder, so that the err sum's noise is sized for two
// honest dealers, is refused by owners on default flags (colluders all)
// with the reason, and joined by an owner configured to assume one
// colluder. Nothing is spent by the refusing owners.
func TestOwnersRefuseFewerColludersThanTheirOwn(t *testing.T) {
	c := newCluster(t, 8, func(cfg *boost.Config, p *securesum.Params) {
		cfg.Mechanism, cfg.Epsilon, cfg.Alpha, cfg.ErrEpsilon, cfg.Colluders = "pm", 1, boost.AlphaSecureSum, 1, 1
		p.Method = securesum.Shamir
	})
	c.owners[0].cfg.Colluders = 1
	c.startUser(t, nil)
	c.run(time.Minute)
	if !c.done || c.err == nil {
		t.Fatalf("done %v, err %v: the session should fail for lack of owners", c.done, c.err)
	}
	if _, ok := c.user.joined[c.ids[0]]; !ok {
		t.Fatal("the owner assuming one colluder did not join")
	}
	for i := 1; i < len(c.ids); i++ {
		if why := c.user.notJoined[c.ids[i]]; !strings.Contains(why, "this owner assumes colluders all") {
			t.Fatalf("owner %d's refusal: %q", i, why)
		}
		if c.ledgers[i].Spent() != 0 {
			t.Fatalf("owner %d spent %v", i, c.ledgers[i].Spent())
		}
	}
}

package session

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/protobuf/proto"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/lifecycle"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// The data owner's transition table in the drand style: every row starts
// from a fresh owner (alice), brings it to a named state with the inputs
// listed (engine.Step, no driver, no network, no clock), feeds one input
// and states the phase, the owner's public state, the effects (by shape:
// the kind of message and its recipient or topic, the timer, the
// notification), the refusal (errors.Is) and the drop counted. After every
// step, each phase change it caused must be one lifecycle.CanGo allows.

// The actors.
const (
	alice   protocol.PeerID = "alice" // the owner under test
	bob     protocol.PeerID = "bob"
	carol   protocol.PeerID = "carol"
	dave    protocol.PeerID = "dave" // joined late: a roster without alice
	mallory protocol.PeerID = "mallory"
)

const (
	tSession = "s1"
	tOther   = "s2"
)

var tNow = time.Unix(1_700_000_000, 0)

// tableFix is what every row shares: alice's data, the session's
// configuration (stumps, mechanism none, err sums over Shamir), and the
// messages of a data user that follows the protocol.
type tableFix struct {
	data   boost.Data
	cfg    boost.Config
	sum    securesum.Params
	wcfg   *wire.SessionConfig
	spec   boost.Spec
	roster *Roster
	seq    uint64
}

func newTableFix(t *testing.T) *tableFix { return newTableFixWith(t, nil) }

// newTableFixWith is newTableFix with the session's configuration changed.
func newTableFixWith(t *testing.T, mutate func(*boost.Config)) *tableFix {
	t.Helper()
	f := &tableFix{cfg: boost.DefaultConfig(), sum: securesum.DefaultParams()}
	f.cfg.Learner, f.cfg.Mechanism, f.cfg.Alpha = boost.Stump, "none", boost.AlphaSecureSum
	f.cfg.OwnersPerRound, f.cfg.Rounds, f.cfg.Seed = 2, 2, 5
	f.sum.Method, f.sum.Committee = securesum.Shamir, 3
	if mutate != nil {
		mutate(&f.cfg)
	}
	var err error
	f.data, err = boost.Prepare(boost.DataSpec{Source: "synthetic", Owners: 3, SamplesPerOwner: 20, UserSamples: 300,
		TestSamples: 300, Seed: 5}, f.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.wcfg = f.config(t, f.cfg, f.sum)
	f.spec, _, err = ParseWireConfig(f.wcfg)
	if err != nil {
		t.Fatal(err)
	}
	f.spec.SetColumns(f.data.Owners[0].Schema)
	f.roster = f.rosterOf(alice, bob, carol)
	return f
}

// config is the announced configuration of cfg and sum, as NewUser makes it.
func (f *tableFix) config(t *testing.T, cfg boost.Config, sum securesum.Params) *wire.SessionConfig {
	t.Helper()
	us, err := boost.NewUserState(cfg, f.data.User, f.data.Test)
	if err != nil {
		t.Fatal(err)
	}
	if err := us.Spec.WithSum(sum.MinParties, sum.ScaleBits); err != nil {
		t.Fatal(err)
	}
	w := WireConfig(cfg, us.Spec, sum, testTiming(), schemaDigest(f.data.User))
	w.Schema = schemaWire(f.data.User)
	return w
}

// owner is a fresh alice: every callback set, so that each report shows
// as a Notify effect.
func (f *tableFix) owner(t *testing.T, mutate func(*OwnerConfig)) *Owner {
	t.Helper()
	cfg := OwnerConfig{User: userID, Data: f.data.Owners[0], Ledger: protocol.NewMemLedger(ownerBudget),
		MaxEpsilon: 1, AllowNone: true, NoneCharge: 1,
		Noise:     func(r, a int) *rand.Rand { return boost.NoiseStream(f.cfg.Seed, r, a, 0) },
		ErrNoise:  func(r, a int) *rand.Rand { return boost.ErrNoiseStream(f.cfg.Seed, r, a, 0) },
		SumRand:   rng.Derive(f.cfg.Seed, 9, 0),
		NonceRand: rng.Derive(f.cfg.Seed, 10, 0),
		Clock:     protocol.NewManualClock(tNow), Log: hclog.NewNullLogger(),
		OnFinal: func(*boost.Model) {}, OnEnd: func(string, string) {}, OnRefuse: func(string, string) {},
		OnOutcome: func(string, protocol.Outcome) {}, OnErrDealing: func(string, int, int, []float64, []float64) {},
		Observe: func(OwnerEvent) {},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	o, err := NewOwner(alice, nopPoster{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

func (f *tableFix) rosterOf(ids ...protocol.PeerID) *Roster { return f.rosterV(1, ids...) }

// rosterV is version v of a roster (a resumed user's is its checkpoint's + 1).
func (f *tableFix) rosterV(v uint32, ids ...protocol.PeerID) *Roster {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	addrs, nonces := make([][]string, len(ids)), make([][]byte, len(ids))
	for i, id := range ids {
		nonces[i] = bytes.Repeat([]byte(id[:1]), NonceBytes)
	}
	return newRoster(tSession, v, ids, addrs, nonces)
}

// from wraps body in an envelope of session s, round attempt (r, a), sent
// by sender on the control topic.
func (f *tableFix) from(t *testing.T, sender protocol.PeerID, s string, r, a uint32, body proto.Message) engine.Message {
	t.Helper()
	f.seq++
	env, err := wire.Wrap(&wire.Header{Version: wire.Version, Session: s, Round: r, Attempt: a, Seq: f.seq}, body)
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.Marshal(env, wire.MaxControlBytes)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Message{From: sender, Topic: wire.TopicControl, Data: b}
}

func (f *tableFix) ctl(t *testing.T, r, a uint32, body proto.Message) engine.Message {
	return f.from(t, userID, tSession, r, a, body)
}

func (f *tableFix) announce(t *testing.T, s string, w *wire.SessionConfig) engine.Message {
	return f.from(t, userID, s, 0, 0, &wire.Announce{Config: w})
}

func (f *tableFix) rosterMsg(t *testing.T, r *Roster) engine.Message {
	return f.ctl(t, 1, 0, r.chunks()[0])
}

// sel is the Select of (r, a) naming selected by index over roster ro
// (what the data user sends).
func (f *tableFix) sel(t *testing.T, ro *Roster, r, a uint32, deadline time.Time, selected ...protocol.PeerID) engine.Message {
	return f.selWith(t, ro, r, a, func(s *wire.Select) { s.SelectedIndex = ro.indices(selected) }, deadline)
}

// selByID is sel naming the owners by id (Select.selected).
func (f *tableFix) selByID(t *testing.T, ro *Roster, r, a uint32, deadline time.Time, selected ...protocol.PeerID) engine.Message {
	return f.selWith(t, ro, r, a, func(s *wire.Select) { s.Selected = strs(selected) }, deadline)
}

func (f *tableFix) selWith(t *testing.T, ro *Roster, r, a uint32, name func(*wire.Select), deadline time.Time) engine.Message {
	s := &wire.Select{RosterVersion: ro.Version, RosterSize: uint32(len(ro.IDs)), RosterDigest: ro.Digest, DeadlineUnixMs: deadline.UnixMilli()}
	name(s)
	return f.ctl(t, r, a, s)
}

// learner is a stump fitted to bob's data (any valid learner will do).
func (f *tableFix) learner(t *testing.T, r, a uint32) engine.Message {
	t.Helper()
	l, err := wire.LearnerOf(f.base(t))
	if err != nil {
		t.Fatal(err)
	}
	return f.ctl(t, r, a, l)
}

func (f *tableFix) base(t *testing.T) *boost.Base {
	t.Helper()
	m, err := boost.NewOwner(f.data.Owners[1])
	if err != nil {
		t.Fatal(err)
	}
	sh, err := m.LocalShare(&f.spec, rng.Derive(1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	base, err := boost.Aggregate(&f.spec, []boost.Share{sh})
	if err != nil {
		t.Fatal(err)
	}
	return base
}

func (f *tableFix) alpha(t *testing.T, r, a uint32, alpha float64) engine.Message {
	return f.ctl(t, r, a, &wire.Alpha{Accepted: true, Alpha: alpha})
}

// sumStart is the SumStart a real coordinator sends alice for the err sum
// of (r, a) of session s over the whole roster; mutate changes it.
func (f *tableFix) sumStart(t *testing.T, s string, r, a uint32, mutate func(*wire.SumStart)) engine.Message {
	t.Helper()
	return f.sumStartOf(t, s, r, a, PurposeErr, f.roster.IDs, 2, pairSumParams(&f.spec, f.sum), mutate)
}

// shareStart is the SumStart of the distributed share sum of (r, a) among
// the selected owners.
func (f *tableFix) shareStart(t *testing.T, r, a uint32, selected ...protocol.PeerID) engine.Message {
	t.Helper()
	selected = slices.Clone(selected)
	slices.Sort(selected)
	return f.sumStartOf(t, tSession, r, a, PurposeShare, selected, f.spec.DistributedLen(), shareSumParams(&f.spec, f.sum), nil)
}

// shareStartPool is shareStart as the data user sends it since issue 31:
// the committee drawn from the roster (securesum.Request.Pool), so it
// reaches committee members that were not selected.
func (f *tableFix) shareStartPool(t *testing.T, r, a uint32, selected ...protocol.PeerID) engine.Message {
	t.Helper()
	selected = slices.Clone(selected)
	slices.Sort(selected)
	return f.sumStartOf(t, tSession, r, a, PurposeShare, selected, f.spec.DistributedLen(), shareSumParams(&f.spec, f.sum), func(*wire.SumStart) {}, f.roster.IDs...)
}

func (f *tableFix) sumStartOf(t *testing.T, s string, r, a uint32, purpose string, parties []protocol.PeerID, length int,
	p securesum.Params, mutate func(*wire.SumStart), pool ...protocol.PeerID) engine.Message {
	t.Helper()
	var got *wire.Envelope
	env := securesum.Env{Self: userID, Clock: protocol.NewManualClock(tNow), Timers: &engine.Out{}, Rand: rng.Derive(1, 1, 1),
		Log: hclog.NewNullLogger(), Send: func(to protocol.PeerID, _ string, e *wire.Envelope) {
			if to == alice && e.GetSumStart() != nil {
				got = proto.Clone(e).(*wire.Envelope)
			}
		}}
	c := securesum.NewCoordinator(env, p)
	f.seq++
	h := &wire.Header{Version: wire.Version, Session: s, Round: r, Attempt: a, Seq: f.seq}
	if err := c.Sum(securesum.Request{Header: h, Purpose: purpose, Roster: parties, RosterVersion: f.roster.Version,
		Length: length, Beacon: f.roster.Beacon, Pool: pool}, func([]float64, int, error) {}); err != nil {
		t.Fatal(err)
	}
	if got == nil {
		t.Fatal("the coordinator sent alice no SumStart")
	}
	if mutate != nil {
		mutate(got.GetSumStart())
	}
	b, err := wire.Marshal(got, wire.MaxSumFrameBytes)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Message{From: userID, Protocol: wire.ProtoShamir, Data: b}
}

// final is a Final with outcome out (nil: none) and a model of out's
// rounds (one without an outcome).
func (f *tableFix) final(t *testing.T, out *protocol.Outcome) engine.Message {
	t.Helper()
	m := boost.NewModel(f.cfg, f.data.User, f.spec.Splits)
	base := *f.base(t)
	n := 1
	if out != nil && out.Kind != protocol.OutcomeFailed {
		n = out.Rounds
	}
	for range n {
		m.Rounds = append(m.Rounds, boost.ModelRound{Alpha: 0.5, Err: 0.2, Base: base})
	}
	var wout *wire.Outcome
	if out != nil {
		wout = out.Wire()
	}
	fin, err := wire.FinalWC(m, wout)
	if err != nil {
		t.Fatal(err)
	}
	return f.ctl(t, 2, 0, fin)
}

func (f *tableFix) abort(t *testing.T, reason string, out *protocol.Outcome) engine.Message {
	a := &wire.Abort{Reason: reason}
	if out != nil {
		a.Outcome = out.Wire()
	}
	return f.ctl(t, 1, 0, a)
}

// ownerShape names an effect without its bytes: a message by its kind and
// recipient or topic, a timer by name (and duration), a notification by
// the report it carries.
func ownerShape(e engine.Effect) string {
	kind := func(data []byte) string {
		env, err := wire.Unmarshal(data, wire.MaxSumFrameBytes)
		if err != nil {
			return "garbage"
		}
		if s := env.GetSum(); s != nil {
			return "sum " + strings.ToLower(s.GetKind().String())
		}
		name := fmt.Sprintf("%T", env.GetBody())
		return strings.ToLower(strings.TrimPrefix(name, "*wire.Envelope_"))
	}
	switch e := e.(type) {
	case engine.Send:
		return fmt.Sprintf("send %s to %s", kind(e.Data), e.To)
	case engine.Publish:
		return fmt.Sprintf("publish %s on %s", kind(e.Data), e.Topic)
	case engine.SetTimer:
		return fmt.Sprintf("set %s %s", e.Name, e.After)
	case engine.CancelTimer:
		return "cancel " + e.Name
	case engine.Notify:
		switch v := e.Value.(type) {
		case OwnerEvent:
			return "observe " + v.Kind
		case ownerRefusal:
			return "refusal"
		case ownerLeft:
			return "left: " + v.out.Kind.String()
		case *boost.Model:
			return "final model"
		case errDealt:
			return "err dealing"
		case preparePeers:
			ack := ""
			if v.ack != 0 {
				ack = fmt.Sprintf(", then ack %d", v.ack)
			}
			if len(v.expect) > 0 {
				n := 0
				for _, x := range v.expect {
					n += len(x.peers)
				}
				return fmt.Sprintf("prepare %d, expect %d%s", len(v.dial), n, ack)
			}
			return fmt.Sprintf("prepare %d%s", len(v.dial), ack)
		case protocol.Outcome:
			return fmt.Sprintf("notify %s: %s", e.Event, v.Kind)
		}
		return fmt.Sprintf("notify %s %T", e.Event, e.Value)
	}
	return fmt.Sprintf("%T", e)
}

func ownerShapes(effs []engine.Effect) []string {
	out := []string{}
	for _, e := range effs {
		out = append(out, ownerShape(e))
	}
	return out
}

// step feeds one input and checks that the phase changes it caused are
// valid: the phase before, the ones its end passed through (an End
// notifies EventFinal in Done, EventAborted in Aborted), the phase after.
func step(t *testing.T, o *Owner, at time.Time, in engine.Input) ([]engine.Effect, error) {
	t.Helper()
	from := o.lc.Phase()
	effs, err := engine.Step(o, at, in)
	path := []lifecycle.Phase{from}
	for _, e := range effs {
		if n, ok := e.(engine.Notify); ok && n.Event == engine.EventFinal {
			path = append(path, lifecycle.Done)
		} else if ok && n.Event == engine.EventAborted {
			path = append(path, lifecycle.Aborted)
		}
	}
	path = append(path, o.lc.Phase())
	for i := 1; i < len(path); i++ {
		if path[i] != path[i-1] && !path[i-1].CanGo(path[i]) {
			t.Errorf("invalid phase change %s → %s (path %v)", path[i-1], path[i], path)
		}
	}
	return effs, err
}

const idle = "set idle 1m0s" // the announced idle timeout (testTiming)

func TestOwnerTransitions(t *testing.T) {
	f := newTableFix(t)
	fd := newTableFixWith(t, func(c *boost.Config) {
		c.Privacy, c.OwnersPerRound, c.PrivacyClip = boost.PrivacyDistributed, 3, 1
	})
	soon := tNow.Add(time.Second)
	var (
		announce = f.announce(t, tSession, f.wcfg)
		roster   = f.rosterMsg(t, f.roster)
		selOther = f.sel(t, f.roster, 1, 0, soon, bob, carol) // round 1 without alice
		learner  = f.learner(t, 1, 0)
		errStart = f.sumStart(t, tSession, 1, 0, nil)
		failed   = protocol.Failed(1, 2, "", errors.New("the user gave up"))
		complete = protocol.NewOutcome(2, 2, "", nil)
	)
	// The named states, each reached from a fresh owner by these inputs.
	states := map[string][]engine.Input{
		"idle":      nil,
		"admitting": {announce},
		"running":   {announce, roster, selOther},
		"learner":   {announce, roster, selOther, learner},
		"done":      {announce, roster, selOther, f.final(t, &complete)},
		"aborted":   {announce, roster, selOther, f.abort(t, "stop", nil)},
	}
	resumeAfter := func(r uint32) engine.Input {
		w := proto.Clone(f.wcfg).(*wire.SessionConfig)
		w.Resume, w.ResumeAfterRound = true, r
		return f.announce(t, tSession, w)
	}
	states["learner, resume held"] = append(slices.Clone(states["learner"]), resumeAfter(1))
	// early is 64 Alphas of attempts not yet begun: the early buffer full.
	var early []engine.Input
	early = append(early, states["running"]...)
	for a := uint32(1); a <= maxEarly; a++ {
		early = append(early, f.alpha(t, 1, a, 0.5))
	}
	states["early full"] = early

	type row struct {
		name    string
		fix     *tableFix // the session's fixture: nil is f
		from    string
		owner   func(*OwnerConfig) // changes alice's configuration
		in      engine.Input
		at      time.Duration // after the setup (at tNow)
		phase   lifecycle.Phase
		state   OwnerState
		effects []string
		err     error  // errors.Is; nil: accepted
		drop    string // the counter the refusal is counted under
		check   func(t *testing.T, o *Owner, effs []engine.Effect)
	}
	spent := func(want float64) func(*testing.T, *Owner, []engine.Effect) {
		return func(t *testing.T, o *Owner, _ []engine.Effect) {
			if got := o.cfg.Ledger.Spent(); got != want {
				t.Errorf("ledger spent %g, want %g", got, want)
			}
		}
	}
	refuses := func(text string) func(*testing.T, *Owner, []engine.Effect) {
		return func(t *testing.T, o *Owner, effs []engine.Effect) {
			for _, e := range effs {
				if s, ok := e.(engine.Send); ok {
					env, _ := wire.Unmarshal(s.Data, wire.MaxControlBytes)
					if why := env.GetRefuse().GetReason(); strings.Contains(why, text) {
						return
					}
				}
			}
			t.Errorf("no Refuse saying %q in %v", text, ownerShapes(effs))
		}
	}
	left := func(kind protocol.OutcomeKind, reason string) func(*testing.T, *Owner, []engine.Effect) {
		return func(t *testing.T, o *Owner, effs []engine.Effect) {
			out := o.lc.Outcome()
			if out.Kind != kind || !strings.Contains(out.Reason, reason) {
				t.Errorf("outcome %s, want %s with %q", out, kind, reason)
			}
			for _, e := range effs {
				if n, ok := e.(engine.Notify); ok && (n.Event == engine.EventFinal || n.Event == engine.EventAborted) {
					if !reflect.DeepEqual(n.Value, out) {
						t.Errorf("notified %v, outcome %v", n.Value, out)
					}
					return
				}
			}
			t.Error("no end notified")
		}
	}
	// check is the user's LiveCheck for roster version v with an n-byte nonce.
	check := func(v uint32, n int) engine.Message {
		return f.ctl(t, 0, 0, &wire.LiveCheck{Nonce: bytes.Repeat([]byte{7}, n), RosterVersion: v})
	}
	echoes := func(t *testing.T, o *Owner, effs []engine.Effect) {
		for _, e := range effs {
			if s, ok := e.(engine.Send); ok {
				env, _ := wire.Unmarshal(s.Data, wire.MaxControlBytes)
				if n := env.GetLiveEcho().GetNonce(); n != nil && !bytes.Equal(n, bytes.Repeat([]byte{7}, NonceBytes)) {
					t.Errorf("echoed %x, want the check's nonce", n)
				}
			}
		}
	}
	aborted := []string{"observe left session", "left: failed", "cancel idle", "cancel step", "notify aborted: failed", "cancel idle"}
	joins := []string{idle, "observe joined", "send join to user"} // Join arms the idle timer
	refusal := []string{"send refuse to user", "refusal", "observe not joined"}
	ledgerWith := func(key string, round, attempt uint32) func(*OwnerConfig) {
		return func(c *OwnerConfig) {
			l := protocol.NewMemLedger(ownerBudget)
			if err := l.Spend(key, round, attempt, 1); err != nil {
				t.Fatal(err)
			}
			c.Ledger = l
		}
	}
	rows := []row{
		// Announcements.
		{name: "announce: joins", from: "idle", in: announce, phase: lifecycle.Admitting, state: OwnerJoined, effects: joins},
		{name: "announce with SessionCapAuto: the session is capped at its plan (share, 3 err dealings a round)", from: "idle",
			owner: func(c *OwnerConfig) { c.SessionCapAuto = true }, in: announce, phase: lifecycle.Admitting, state: OwnerJoined, effects: joins,
			check: func(t *testing.T, o *Owner, _ []engine.Effect) {
				share, _ := o.shareRelease(&o.spec)
				dealing, _, _ := o.errRelease(&o.spec)
				want := share.Epsilon() + AutoErrAttempts*float64(o.wcfg.GetRounds())*dealing.Epsilon()
				if got := o.lc.Values.SessionMax; got != want || !(got > 0) {
					t.Errorf("the session's cap is %v, want %v", got, want)
				}
			}},
		{name: "announce not from the user", from: "idle", in: f.from(t, mallory, tSession, 0, 0, &wire.Announce{Config: f.wcfg}),
			phase: lifecycle.Idle, state: OwnerIdle, effects: []string{}, err: protocol.ErrNotUser, drop: protocol.ErrNotUser.Error()},
		{name: "garbage on the control topic", from: "idle", in: engine.Message{From: userID, Topic: wire.TopicControl, Data: []byte{0xff, 0x01}},
			phase: lifecycle.Idle, state: OwnerIdle, effects: []string{}, err: errAnyError, drop: "malformed"},
		{name: "refused: budget", from: "idle", owner: func(c *OwnerConfig) { c.Ledger = protocol.NewMemLedger(1.5) }, in: announce,
			phase: lifecycle.Idle, state: OwnerIdle, effects: refusal, err: protocol.ErrBadConfig, drop: protocol.ErrBadConfig.Error(),
			check: refuses("of this owner's budget is left")},
		{name: "refused: colluders", from: "idle", owner: func(c *OwnerConfig) { c.MaxEpsilon = 5 },
			in: f.announce(t, tSession, f.config(t, func() boost.Config {
				c := f.cfg
				c.Mechanism, c.Epsilon, c.ErrEpsilon, c.Colluders = "pm", 1, 1, 1
				return c
			}(), f.sum)),
			phase: lifecycle.Idle, state: OwnerIdle, effects: refusal, err: protocol.ErrBadConfig, drop: protocol.ErrBadConfig.Error(),
			check: refuses("this owner assumes colluders all")},
		{name: "refused: the plan's least cost above the per-session cap", from: "idle", owner: func(c *OwnerConfig) { c.MaxEpsilon, c.SessionMaxEpsilon = 5, 2 },
			in: f.announce(t, tSession, f.config(t, func() boost.Config {
				c := f.cfg
				c.Mechanism, c.Epsilon, c.ErrEpsilon, c.Rounds = "pm", 1, 0.5, 3 // a share and 3 err dealings: 2.5
				return c
			}(), f.sum)),
			phase: lifecycle.Idle, state: OwnerIdle, effects: refusal, err: protocol.ErrBadConfig, drop: protocol.ErrBadConfig.Error(),
			check: refuses("per-session cap")},
		{name: "refused: schema", from: "idle", in: f.announce(t, tSession, func() *wire.SessionConfig {
			w := proto.Clone(f.wcfg).(*wire.SessionConfig)
			w.SchemaDigest = "0123456789abcdef"
			return w
		}()), phase: lifecycle.Idle, state: OwnerIdle, effects: refusal, err: protocol.ErrBadConfig, drop: protocol.ErrBadConfig.Error(),
			check: refuses("the schema differs")},
		{name: "refused: a ring session at a NoRing owner", from: "idle", owner: func(c *OwnerConfig) { c.NoRing = true },
			in: f.announce(t, tSession, func() *wire.SessionConfig {
				w := proto.Clone(f.wcfg).(*wire.SessionConfig)
				w.SumMethod = securesum.Ring
				return w
			}()), phase: lifecycle.Idle, state: OwnerIdle, effects: refusal, err: protocol.ErrBadConfig, drop: protocol.ErrBadConfig.Error()},
		{name: "refused: a session that has this owner's share", from: "idle", owner: ledgerWith(tSession, 1, 0), in: announce,
			phase: lifecycle.Idle, state: OwnerIdle, effects: []string{"refusal"}, err: protocol.ErrWrongSession, drop: protocol.ErrWrongSession.Error()},
		{name: "re-announced while admitting: joins again", from: "admitting", in: announce,
			phase: lifecycle.Admitting, state: OwnerJoined, effects: []string{"send join to user"}},
		{name: "re-announced while running: heard", from: "running", in: announce, at: time.Second,
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{},
			check: func(t *testing.T, o *Owner, _ []engine.Effect) {
				if want := tNow.Add(time.Second); !o.lc.LastHeard().Equal(want) {
					t.Errorf("heard at %v, want %v (the idle timeout counts from the user's last word)", o.lc.LastHeard(), want)
				}
			}},
		{name: "another session while in one", from: "admitting", in: f.announce(t, tOther, f.wcfg),
			phase: lifecycle.Admitting, state: OwnerJoined, effects: []string{}, err: protocol.ErrWrongSession, drop: protocol.ErrWrongSession.Error()},
		{name: "resumed after round 0", from: "running", in: f.announce(t, tSession, func() *wire.SessionConfig {
			w := proto.Clone(f.wcfg).(*wire.SessionConfig)
			w.Resume, w.ResumeAfterRound = true, 0
			return w
		}()), phase: lifecycle.Running, state: OwnerJoined, effects: []string{}},
		{name: "resumed after a round it has no weights of", from: "running", in: f.announce(t, tSession, func() *wire.SessionConfig {
			w := proto.Clone(f.wcfg).(*wire.SessionConfig)
			w.Resume, w.ResumeAfterRound = true, 7
			return w
		}()), phase: lifecycle.Idle, state: OwnerIdle, effects: aborted,
			check: left(protocol.OutcomeFailed, "no longer has that round's weights")},
		// A user that stopped before round 1's Alpha left resumes after
		// round 1 and sends its Learner and Alpha again (directly; the
		// gossiped announcement may come first): held for the Alpha.
		{name: "resumed after a round whose alpha has not come: held", from: "learner", in: resumeAfter(1),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{},
			check: func(t *testing.T, o *Owner, _ []engine.Effect) {
				if o.early.Len() != 1 || o.settled != 0 {
					t.Errorf("%d held, settled %d; want the announcement held, round 1 unsettled", o.early.Len(), o.settled)
				}
			}},
		{name: "the held resume's alpha: the round settles, the resume follows", from: "learner, resume held", in: f.alpha(t, 1, 0, 0.5),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{},
			check: func(t *testing.T, o *Owner, _ []engine.Effect) {
				if o.early.Len() != 0 || o.settled != 1 || len(o.rounds) != 0 || o.current != (roundKey{round: 1}) {
					t.Errorf("%d held, settled %d, %d round states, current %v; want the resume applied after round 1", o.early.Len(), o.settled, len(o.rounds), o.current)
				}
			}},
		{name: "next session after done", from: "done", in: f.announce(t, tOther, f.wcfg),
			phase: lifecycle.Admitting, state: OwnerJoined, effects: joins},
		{name: "the same session id again after an abort: its roster is acked again", from: "aborted, announced again", in: roster,
			phase: lifecycle.Admitting, state: OwnerJoined, effects: []string{"send rosterack to user"}},
		{name: "next session after an abort", from: "aborted", in: f.announce(t, tOther, f.wcfg),
			phase: lifecycle.Admitting, state: OwnerJoined, effects: joins},

		// Control messages that are not the session's.
		{name: "control not from the user", from: "running", in: f.from(t, mallory, tSession, 1, 1, &wire.Alpha{Accepted: true, Alpha: 1}),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, err: protocol.ErrNotUser, drop: protocol.ErrNotUser.Error()},
		{name: "wrong session", from: "running", in: f.from(t, userID, tOther, 1, 0, &wire.Alpha{Accepted: true, Alpha: 1}),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, err: protocol.ErrWrongSession, drop: protocol.ErrWrongSession.Error()},
		{name: "control while idle", from: "idle", in: selOther,
			phase: lifecycle.Idle, state: OwnerIdle, effects: []string{}, err: protocol.ErrWrongSession, drop: protocol.ErrWrongSession.Error()},
		{name: "a sum message of a session not joined", from: "idle",
			in: engine.Message{From: bob, Protocol: wire.ProtoShamir, Data: func() []byte {
				b, _ := wire.Marshal(&wire.Envelope{Header: &wire.Header{Version: wire.Version, Session: tSession, Round: 1},
					Body: &wire.Envelope_Sum{Sum: &wire.Sum{Purpose: PurposeErr, Kind: wire.Sum_SHAMIR_SHARE, Values: []uint64{1, 2}}}}, wire.MaxSumFrameBytes)
				return b
			}()},
			phase: lifecycle.Idle, state: OwnerIdle, effects: []string{}, err: protocol.ErrWrongSession, drop: protocol.ErrWrongSession.Error()},

		// The roster and Select.
		{name: "a roster chunk, the version's last: acked, waits for the Select that names its version", from: "admitting", in: f.rosterMsg(t, f.roster),
			phase: lifecycle.Admitting, state: OwnerJoined, effects: []string{"send rosterack to user"}},
		{name: "the chunk again: acked once", from: "admitting+roster", in: f.rosterMsg(t, f.roster),
			phase: lifecycle.Admitting, state: OwnerJoined, effects: []string{}},
		{name: "select before the roster: waits for the chunks a grace (rosterGrace)", from: "admitting", in: selOther,
			phase: lifecycle.Admitting, state: OwnerJoined, effects: []string{"set roster 500ms"}},
		{name: "no roster after the grace: asks the user for it", from: "select before roster", in: engine.TimerFired{Name: timerRoster},
			phase: lifecycle.Admitting, state: OwnerJoined, effects: []string{"send rosterrequest to user"}},
		{name: "the roster came within the grace: asks nothing", from: "select before roster, then roster", in: engine.TimerFired{Name: timerRoster},
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}},
		{name: "the answer lost: the next select arms the grace again", from: "select before roster, asked", in: f.sel(t, f.roster, 1, 1, soon, bob, carol),
			phase: lifecycle.Admitting, state: OwnerJoined, effects: []string{"set roster 500ms"}},
		{name: "a second select before the roster: one grace", from: "select before roster", in: f.sel(t, f.roster, 1, 1, soon, bob, carol),
			phase: lifecycle.Admitting, state: OwnerJoined, effects: []string{}},
		{name: "select by index before the roster, then the roster: the held select releases the share", from: "select held", in: roster,
			phase: lifecycle.Running, state: OwnerJoined,
			effects: []string{"observe selected", "publish share on " + wire.TopicShares, "observe share", "send rosterack to user"}, check: spent(1)},
		{name: "select by id (Select.selected): share released", from: "admitting+roster", in: f.selByID(t, f.roster, 1, 0, soon, alice, bob),
			phase: lifecycle.Running, state: OwnerJoined,
			effects: []string{"observe selected", "publish share on " + wire.TopicShares, "observe share"}, check: spent(1)},
		{name: "select by id and by index: malformed, nothing spent", from: "admitting+roster",
			in:    f.selWith(t, f.roster, 1, 0, func(s *wire.Select) { s.Selected, s.SelectedIndex = strs([]protocol.PeerID{alice}), []uint32{0} }, soon),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, err: protocol.ErrUnexpected, drop: protocol.ErrUnexpected.Error(), check: spent(0)},
		{name: "select index outside the roster: malformed, nothing spent", from: "admitting+roster",
			in:    f.selWith(t, f.roster, 1, 0, func(s *wire.Select) { s.SelectedIndex = []uint32{0, uint32(len(f.roster.IDs))} }, soon),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, err: protocol.ErrUnexpected, drop: protocol.ErrUnexpected.Error(), check: spent(0)},
		{name: "select indices not ascending: malformed, nothing spent", from: "admitting+roster",
			in:    f.selWith(t, f.roster, 1, 0, func(s *wire.Select) { s.SelectedIndex = []uint32{1, 0} }, soon),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, err: protocol.ErrUnexpected, drop: protocol.ErrUnexpected.Error(), check: spent(0)},
		{name: "select naming nobody: malformed, nothing spent", from: "admitting+roster",
			in:    f.selWith(t, f.roster, 1, 0, func(*wire.Select) {}, soon),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, err: protocol.ErrUnexpected, drop: protocol.ErrUnexpected.Error(), check: spent(0)},
		{name: "select without alice: roster fixed, no share", from: "admitting+roster", in: selOther,
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, check: spent(0)},
		{name: "select naming alice: share released", from: "admitting", in: nil, // filled below
			phase: lifecycle.Running, state: OwnerJoined,
			effects: []string{"observe selected", "publish share on " + wire.TopicShares, "observe share"}, check: spent(1)},
		{name: "select naming alice after its deadline: refused, nothing spent", from: "admitting", in: nil, // filled below
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{"observe selected", "observe refused", "send refuse to user"},
			check: spent(0)},
		{name: "select naming alice again: refused, spent once", from: "running+share", in: f.sel(t, f.roster, 1, 1, soon, alice, carol),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{"observe selected", "observe refused", "send refuse to user"},
			check: func(t *testing.T, o *Owner, effs []engine.Effect) {
				spent(1)(t, o, effs)
				refuses(protocol.ErrAlreadyContributed.Error())(t, o, effs)
			}},
		{name: "select for round 0", from: "running", in: f.sel(t, f.roster, 0, 0, soon, alice),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, err: protocol.ErrWrongRound, drop: protocol.ErrWrongRound.Error()},
		{name: "select of an older attempt", from: "running2", in: f.sel(t, f.roster, 1, 0, soon, alice),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, err: protocol.ErrWrongRound, drop: protocol.ErrWrongRound.Error()},
		{name: "a roster without alice: leaves", from: "admitting+roster without alice",
			in:    f.sel(t, f.rosterOf(bob, carol, dave), 1, 0, soon, bob, carol),
			phase: lifecycle.Idle, state: OwnerIdle, effects: []string{"refusal", "observe left session", "cancel idle"}},
		{name: "a later roster without alice: the session ends for it", from: "running+roster v2 without alice",
			in:    f.sel(t, f.rosterV(2, bob, carol, dave), 1, 1, soon, bob, carol),
			phase: lifecycle.Idle, state: OwnerIdle, effects: append([]string{"refusal"}, aborted...),
			check: left(protocol.OutcomeFailed, "does not name this owner")},
		{name: "a roster with a member alice does not admit", from: "admitting+roster",
			owner: func(c *OwnerConfig) { c.Admit = func(p protocol.PeerID) bool { return p != carol } }, in: selOther,
			phase: lifecycle.Admitting, state: OwnerJoined, effects: []string{}, err: protocol.ErrBadConfig, drop: protocol.ErrBadConfig.Error()},

		// Liveness checks and late joins (liveness_owner.go).
		{name: "liveness check: echoed", from: "admitting", in: check(1, NonceBytes), phase: lifecycle.Admitting, state: OwnerJoined,
			effects: []string{"send liveecho to user"}, check: echoes},
		{name: "liveness check while running: echoed", from: "running", in: check(1, NonceBytes), phase: lifecycle.Running,
			state: OwnerJoined, effects: []string{"send liveecho to user"}, check: echoes},
		{name: "liveness check with a short nonce", from: "admitting", in: check(1, 4), phase: lifecycle.Admitting, state: OwnerJoined,
			effects: []string{}, err: ErrLiveness, drop: ErrLiveness.Error()},
		{name: "liveness check with a 1 KiB nonce", from: "admitting", in: check(1, 1<<10), phase: lifecycle.Admitting, state: OwnerJoined,
			effects: []string{}, err: ErrLiveness, drop: ErrLiveness.Error()},
		{name: "liveness check for roster version 0", from: "admitting", in: check(0, NonceBytes), phase: lifecycle.Admitting,
			state: OwnerJoined, effects: []string{}, err: ErrLiveness, drop: ErrLiveness.Error()},
		{name: "liveness check while idle", from: "idle", in: check(1, NonceBytes), phase: lifecycle.Idle, state: OwnerIdle,
			effects: []string{}, err: protocol.ErrWrongSession, drop: protocol.ErrWrongSession.Error()},
		{name: "liveness check not from the user", from: "admitting", in: f.from(t, mallory, tSession, 0, 0,
			&wire.LiveCheck{Nonce: make([]byte, NonceBytes), RosterVersion: 1}), phase: lifecycle.Admitting, state: OwnerJoined,
			effects: []string{}, err: protocol.ErrNotUser, drop: protocol.ErrNotUser.Error()},
		{name: "held for version 2: a roster without alice does not send it away, nor is asked for",
			from: "held v2+roster without alice", in: f.sel(t, f.rosterOf(bob, carol, dave), 1, 0, soon, bob, carol),
			phase: lifecycle.Admitting, state: OwnerJoined, effects: []string{}},
		{name: "held for version 2: version 2 names alice: running", from: "held v2+roster v2",
			in: f.sel(t, f.rosterV(2, alice, bob, carol, dave), 1, 1, soon, bob, carol), phase: lifecycle.Running, state: OwnerJoined,
			effects: []string{}},
		{name: "held for version 2: a round accepted before a roster names alice: leaves", from: "held v2+learner",
			in: f.alpha(t, 1, 0, 0.5), phase: lifecycle.Idle, state: OwnerIdle,
			effects: []string{"refusal", "observe left session", "cancel idle"}},

		// Learner and Alpha, in and out of order.
		{name: "learner", from: "running", in: learner, phase: lifecycle.Running, state: OwnerJoined, effects: []string{}},
		{name: "the learner's second copy (direct, then gossiped): ignored", from: "learner", in: learner,
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, drop: "second copy"},
		{name: "second learner", from: "learner", in: f.learner(t, 1, 0),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, err: protocol.ErrWrongRound, drop: protocol.ErrWrongRound.Error()},
		{name: "alpha before its learner: held", from: "running", in: f.alpha(t, 1, 0, 0.5),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{},
			check: func(t *testing.T, o *Owner, _ []engine.Effect) {
				if o.early.Len() != 1 || o.settled != 0 {
					t.Errorf("held %d, settled %d: want the alpha held and nothing applied", o.early.Len(), o.settled)
				}
			}},
		{name: "the learner releases the held alpha", from: "alpha held", in: learner,
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{},
			check: func(t *testing.T, o *Owner, _ []engine.Effect) {
				if o.early.Len() != 0 || o.settled != 1 {
					t.Errorf("held %d, settled %d: want the alpha applied", o.early.Len(), o.settled)
				}
			}},
		{name: "alpha", from: "learner", in: f.alpha(t, 1, 0, 0.5), phase: lifecycle.Running, state: OwnerJoined, effects: []string{}},
		{name: "second alpha", from: "alpha", in: f.alpha(t, 1, 0, 0.5),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, err: protocol.ErrWrongRound, drop: protocol.ErrWrongRound.Error()},
		{name: "an alpha that is not positive", from: "learner", in: f.alpha(t, 1, 0, -1),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, err: protocol.ErrUnexpected, drop: protocol.ErrUnexpected.Error()},
		{name: "too many early", from: "early full", in: f.alpha(t, 1, maxEarly+1, 0.5),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, err: lifecycle.ErrReorderFull, drop: protocol.ErrWrongRound.Error()},

		// Err sums.
		{name: "err sum: charged, then dealt", from: "learner", in: errStart, phase: lifecycle.Running, state: OwnerJoined,
			effects: []string{"send sum shamir_share to bob", "send sum shamir_share to carol", "err dealing", "observe err dealing"},
			check:   spent(1)},
		{name: "err sum before its learner: held", from: "running", in: errStart, phase: lifecycle.Running, state: OwnerJoined,
			effects: []string{}, check: func(t *testing.T, o *Owner, effs []engine.Effect) {
				spent(0)(t, o, effs)
				if o.pending.Len() != 1 {
					t.Errorf("%d SumStarts pending, want 1", o.pending.Len())
				}
			}},
		{name: "the learner starts the held err sum", from: "err sum held", in: learner, phase: lifecycle.Running, state: OwnerJoined,
			effects: []string{"send sum shamir_share to bob", "send sum shamir_share to carol", "err dealing", "observe err dealing"},
			check:   spent(1)},
		{name: "err sum again: dealt once, charged once", from: "err dealt", in: f.sumStart(t, tSession, 1, 0, nil),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, check: spent(1)},
		{name: "err sum whose committee digest does not match", from: "learner", in: f.sumStart(t, tSession, 1, 0, func(s *wire.SumStart) {
			s.Committee, s.CommitteeDigest = nil, bytes.Repeat([]byte{7}, 32)
		}), phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, drop: "sum start refused", check: spent(0)},
		{name: "err sum with a threshold below the session's", from: "learner", in: f.sumStart(t, tSession, 1, 0, func(s *wire.SumStart) {
			s.Threshold = 1
		}), phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, drop: "sum start refused", check: spent(0)},
		{name: "err sum over alice alone", from: "learner", in: f.sumStart(t, tSession, 1, 0, func(s *wire.SumStart) {
			s.Excluded = []byte{0b110} // bob and carol left out: the total would be alice's pair
		}), phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, drop: "sum start refused", check: spent(0)},
		{name: "err sum re-opened after alice dealt", from: "err dealt", in: f.sumStart(t, tSession, 1, 0, func(s *wire.SumStart) {
			s.Instance++ // a second total could be subtracted from the first
		}), phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, drop: "sum start refused", check: spent(1)},
		{name: "err sum of another session", from: "learner", in: f.sumStart(t, tOther, 1, 0, nil),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, err: protocol.ErrWrongSession, drop: protocol.ErrWrongSession.Error()},
		{name: "err sum of a re-announced session dealt before", from: "learner", owner: ledgerWith(errLedgerKey(tSession, roundKey{1, 0}), 1, 0),
			in: errStart, phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, drop: "err sum: dealt already", check: spent(1)},
		{name: "err sum the ledger refuses", from: "learner", in: errStart, phase: lifecycle.Running, state: OwnerJoined,
			owner:   func(c *OwnerConfig) { c.Ledger = &refusingLedger{MemLedger: protocol.NewMemLedger(ownerBudget)} },
			effects: []string{}, drop: "err sum: ledger refused"},
		{name: "err sum past the per-session cap: refused, nothing dealt", from: "learner", in: errStart, phase: lifecycle.Running, state: OwnerJoined,
			owner: func(c *OwnerConfig) {
				l := protocol.NewMemLedger(ownerBudget)
				_ = l.Spend(tSession+"/err/9/9", 9, 9, 0.5) // earlier attempts of this session
				c.Ledger, c.SessionMaxEpsilon = l, 1
			},
			effects: []string{}, drop: "err sum: ledger refused", check: spent(0.5)},
		{name: "stale err sum", from: "running2", in: errStart, phase: lifecycle.Running, state: OwnerJoined,
			effects: []string{}, drop: "stale sum start", check: spent(0)},

		// A distributed-privacy session: the share is charged when
		// selected and dealt into the share sum, once.
		{name: "distributed: selected: charged, the share prepared, nothing published", fix: fd, from: "dist admitting+roster",
			in:    fd.sel(t, fd.roster, 1, 0, soon, alice, bob, carol),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{"observe selected", "observe share"}, check: spent(1)},
		{name: "distributed: the share sum deals the charged share", fix: fd, from: "dist selected", in: fd.shareStart(t, 1, 0, alice, bob, carol),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{"send sum shamir_share to bob", "send sum shamir_share to carol"}, check: spent(1)},
		{name: "distributed: a share sum before its Select: held", fix: fd, from: "dist admitting+roster", in: fd.shareStart(t, 1, 0, alice, bob, carol),
			phase: lifecycle.Admitting, state: OwnerJoined, effects: []string{}, check: func(t *testing.T, o *Owner, effs []engine.Effect) {
				spent(0)(t, o, effs)
				if o.pending.Len() != 1 {
					t.Errorf("%d SumStarts pending, want 1", o.pending.Len())
				}
			}},
		{name: "distributed: the Select starts the held share sum", fix: fd, from: "dist share held", in: fd.sel(t, fd.roster, 1, 0, soon, alice, bob, carol),
			phase: lifecycle.Running, state: OwnerJoined,
			effects: []string{"observe selected", "send sum shamir_share to bob", "send sum shamir_share to carol", "observe share"}, check: spent(1)},
		// Since issue 31 a share sum's committee comes from the roster: a
		// member that was not selected serves it (holds shares, reveals
		// one partial sum), once it has the roster the committee is drawn
		// from.
		{name: "distributed: not selected, in the share committee: serves", fix: fd, from: "dist not selected",
			in: fd.shareStartPool(t, 1, 0, bob, carol, dave), phase: lifecycle.Running, state: OwnerJoined, effects: []string{},
			check: func(t *testing.T, o *Owner, effs []engine.Effect) {
				spent(0)(t, o, effs)
				if o.pending.Len() != 0 || o.shareParty.Stats().Started != 1 {
					t.Errorf("%d SumStarts pending, %d instances started; want 0 and 1 (served)", o.pending.Len(), o.shareParty.Stats().Started)
				}
			}},
		{name: "distributed: not selected, before the roster: the share sum waits for it", fix: fd, from: "dist not selected, no roster",
			in: fd.shareStartPool(t, 1, 0, bob, carol, dave), phase: lifecycle.Admitting, state: OwnerJoined, effects: []string{},
			check: func(t *testing.T, o *Owner, effs []engine.Effect) {
				if o.pending.Len() != 1 || o.shareParty.Stats().Started != 0 {
					t.Errorf("%d SumStarts pending, %d instances started; want 1 and 0 (held for the roster)", o.pending.Len(), o.shareParty.Stats().Started)
				}
			}},
		{name: "distributed: the roster arrives: the held share sum is served", fix: fd, from: "dist not selected, share held",
			in: fd.rosterMsg(t, fd.roster), phase: lifecycle.Running, state: OwnerJoined, effects: []string{"send rosterack to user"},
			check: func(t *testing.T, o *Owner, effs []engine.Effect) {
				if o.pending.Len() != 0 || o.shareParty.Stats().Started != 1 {
					t.Errorf("%d SumStarts pending, %d instances started; want 0 and 1", o.pending.Len(), o.shareParty.Stats().Started)
				}
			}},
		{name: "distributed: selected again: refused, dealt once", fix: fd, from: "dist dealt", in: fd.sel(t, fd.roster, 1, 1, soon, alice, bob, carol),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{"observe selected", "observe refused", "send refuse to user"},
			check: func(t *testing.T, o *Owner, effs []engine.Effect) {
				spent(1)(t, o, effs)
				refuses(protocol.ErrAlreadyContributed.Error())(t, o, effs)
			}},

		// The end.
		{name: "abort without an outcome", from: "running", in: f.abort(t, "the user gave up", nil),
			phase: lifecycle.Idle, state: OwnerIdle, effects: aborted,
			check: left(protocol.OutcomeFailed, "the user gave up")},
		{name: "abort with an outcome", from: "running", in: f.abort(t, "x", &failed),
			phase: lifecycle.Idle, state: OwnerIdle, effects: aborted,
			check: left(protocol.OutcomeFailed, "the user gave up")},
		{name: "abort with a complete outcome", from: "running", in: f.abort(t, "x", &complete),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, err: protocol.ErrUnexpected, drop: protocol.ErrUnexpected.Error()},
		{name: "abort while admitting", from: "admitting", in: f.abort(t, "too few owners", nil),
			phase: lifecycle.Idle, state: OwnerIdle, effects: aborted,
			check: left(protocol.OutcomeFailed, "too few owners")},
		{name: "idle timer before a full timeout of silence: runs on", from: "running", in: engine.TimerFired{Name: lifecycle.TimerIdle},
			at: 20 * time.Second, phase: lifecycle.Running, state: OwnerJoined, effects: []string{"set idle 40s"}},
		{name: "idle timeout", from: "running", in: engine.TimerFired{Name: lifecycle.TimerIdle}, at: time.Minute,
			phase: lifecycle.Idle, state: OwnerIdle, effects: aborted,
			check: func(t *testing.T, o *Owner, effs []engine.Effect) {
				left(protocol.OutcomeFailed, "no message from the data user for 1m0s")(t, o, effs)
				if !o.lc.Outcome().Own {
					t.Error("the idle timeout is not the owner's own outcome")
				}
			}},
		{name: "idle timer after the end", from: "aborted", in: engine.TimerFired{Name: lifecycle.TimerIdle}, at: time.Minute,
			phase: lifecycle.Idle, state: OwnerIdle, effects: []string{}},
		{name: "an unknown timer", from: "running", in: engine.TimerFired{Name: "nope"},
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, err: protocol.ErrUnexpected},
		{name: "final", from: "running", in: f.final(t, &complete), phase: lifecycle.Done, state: OwnerDone,
			effects: []string{"final model", "observe left session", "left: complete", "cancel idle", "cancel step", "notify final: complete"},
			check: func(t *testing.T, o *Owner, effs []engine.Effect) {
				left(protocol.OutcomeComplete, "")(t, o, effs)
				if o.final == nil || len(o.final.Rounds) != 2 {
					t.Error("no final model kept")
				}
			}},
		{name: "final without an outcome: the model says", from: "running", in: f.final(t, nil), phase: lifecycle.Done, state: OwnerDone,
			effects: []string{"final model", "observe left session", "left: partial", "cancel idle", "cancel step", "notify final: partial"}},
		{name: "final whose outcome is not the model's", from: "running", in: f.final(t, &failed),
			phase: lifecycle.Running, state: OwnerJoined, effects: []string{}, err: protocol.ErrUnexpected, drop: protocol.ErrUnexpected.Error()},
		{name: "final after the end", from: "done", in: f.final(t, &complete),
			phase: lifecycle.Done, state: OwnerDone, effects: []string{}, err: protocol.ErrWrongSession, drop: protocol.ErrWrongSession.Error()},
	}
	// The distributed session's states.
	dsel := fd.sel(t, fd.roster, 1, 0, soon, alice, bob, carol)
	dstart := fd.shareStart(t, 1, 0, alice, bob, carol)
	dbase := []engine.Input{fd.announce(t, tSession, fd.wcfg), fd.rosterMsg(t, fd.roster)}
	states["dist admitting+roster"] = dbase
	states["dist selected"] = append(slices.Clone(dbase), dsel)
	states["dist share held"] = append(slices.Clone(dbase), dstart)
	states["dist dealt"] = append(slices.Clone(dbase), dsel, dstart)
	dselOthers := fd.selByID(t, fd.roster, 1, 0, soon, bob, carol, dave) // dave: not in the roster
	states["dist not selected"] = append(slices.Clone(dbase), dselOthers)
	states["dist not selected, no roster"] = []engine.Input{fd.announce(t, tSession, fd.wcfg), dselOthers}
	states["dist not selected, share held"] = []engine.Input{fd.announce(t, tSession, fd.wcfg), dselOthers, fd.shareStartPool(t, 1, 0, bob, carol, dave)}
	// States reached with inputs built above.
	states["running+share"] = []engine.Input{announce, roster, f.sel(t, f.roster, 1, 0, soon, alice, bob)}
	states["running2"] = []engine.Input{announce, roster, selOther, f.sel(t, f.roster, 1, 1, soon, bob, carol)}
	states["admitting+roster without alice"] = []engine.Input{announce, f.rosterMsg(t, f.rosterOf(bob, carol, dave))}
	states["admitting+roster"] = []engine.Input{announce, roster}
	states["aborted, announced again"] = append(slices.Clone(states["aborted"]), announce)
	states["select before roster"] = []engine.Input{announce, selOther}
	states["select before roster, asked"] = []engine.Input{announce, selOther, engine.TimerFired{Name: timerRoster}}
	states["select before roster, then roster"] = []engine.Input{announce, selOther, roster}
	states["select held"] = []engine.Input{announce, f.sel(t, f.roster, 1, 0, soon, alice, bob)}
	states["running+roster v2 without alice"] = []engine.Input{announce, roster, selOther, f.rosterMsg(t, f.rosterV(2, bob, carol, dave))}
	states["alpha held"] = []engine.Input{announce, roster, selOther, f.alpha(t, 1, 0, 0.5)}
	heldV2 := []engine.Input{announce, check(2, NonceBytes), f.rosterMsg(t, f.rosterOf(bob, carol, dave))}
	states["held v2+roster without alice"] = heldV2
	states["held v2+roster v2"] = append(slices.Clone(heldV2), f.sel(t, f.rosterOf(bob, carol, dave), 1, 0, soon, bob, carol),
		f.rosterMsg(t, f.rosterV(2, alice, bob, carol, dave)))
	states["held v2+learner"] = append(slices.Clone(heldV2), f.sel(t, f.rosterOf(bob, carol, dave), 1, 0, soon, bob, carol), learner)
	states["alpha"] = []engine.Input{announce, roster, selOther, learner, f.alpha(t, 1, 0, 0.5)}
	states["err sum held"] = []engine.Input{announce, roster, selOther, errStart}
	states["err dealt"] = []engine.Input{announce, roster, selOther, learner, errStart}
	for i := range rows {
		switch rows[i].name {
		case "select naming alice: share released":
			rows[i].from, rows[i].in = "admitting+roster", f.sel(t, f.roster, 1, 0, soon, alice, bob)
		case "select naming alice after its deadline: refused, nothing spent":
			rows[i].from, rows[i].in = "admitting+roster", f.sel(t, f.roster, 1, 0, tNow.Add(-time.Millisecond), alice, bob)
		}
	}

	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			setup, ok := states[r.from]
			if !ok {
				t.Fatalf("no state %q", r.from)
			}
			fix := r.fix
			if fix == nil {
				fix = f
			}
			o := fix.owner(t, r.owner)
			for i, in := range setup {
				if _, err := step(t, o, tNow, in); err != nil {
					t.Fatalf("setup %d (%s): %v", i, r.from, err)
				}
			}
			before := o.stats.Snapshot()
			effs, err := step(t, o, tNow.Add(r.at), r.in)
			t.Logf("%s → %s, %q, err %v", r.from, o.lc.Phase(), ownerShapes(effs), err)
			switch {
			case r.err == errAnyError && err == nil, r.err != errAnyError && !errors.Is(err, r.err):
				t.Errorf("error %v, want %v", err, r.err)
			}
			if got := o.lc.Phase(); got != r.phase {
				t.Errorf("phase %s, want %s", got, r.phase)
			}
			if got := o.state(); got != r.state {
				t.Errorf("state %s, want %s", got, r.state)
			}
			if got := ownerShapes(effs); !reflect.DeepEqual(got, r.effects) {
				t.Errorf("effects\n got %q\nwant %q", got, r.effects)
			}
			after := o.stats.Snapshot()
			if r.drop != "" && after[r.drop] != before[r.drop]+1 {
				t.Errorf("drop %q counted %d → %d, want one more (counters %v)", r.drop, before[r.drop], after[r.drop], after)
			}
			if r.check != nil {
				r.check(t, o, effs)
			}
		})
	}
}

// errAnyError in a row wants some error (a decoder's, with no sentinel).
var errAnyError = errors.New("any error")

// refusingLedger refuses every err dealing (a ledger whose fsync fails).
type refusingLedger struct{ *protocol.MemLedger }

func (l *refusingLedger) Spend(key string, round, attempt uint32, eps float64) error {
	if strings.Contains(key, "/err/") {
		return errors.New("fsync: disk full")
	}
	return l.MemLedger.Spend(key, round, attempt, eps)
}

// TestOwnerDealsOnlyChargedValues: the err party's noise hook refuses a
// Begin that did not come through the release gate (no charged dealing),
// so that no code path but Session.Release's send deals a value of this
// owner's into a sum; the same Begin with a charged dealing deals.
func TestOwnerDealsOnlyChargedValues(t *testing.T) {
	f := newTableFix(t)
	o := f.owner(t, nil)
	for _, in := range []engine.Input{f.announce(t, tSession, f.wcfg), f.rosterMsg(t, f.roster), f.sel(t, f.roster, 1, 0, tNow.Add(time.Second), bob, carol)} {
		if _, err := step(t, o, tNow, in); err != nil {
			t.Fatal(err)
		}
	}
	env, err := wire.Unmarshal(f.sumStart(t, tSession, 1, 0, nil).Data, wire.MaxSumFrameBytes)
	if err != nil {
		t.Fatal(err)
	}
	begin := func() error {
		return o.party.Begin(env.GetHeader(), env.GetSumStart(), o.roster.IDs, o.roster.Beacon, userID, []float64{0.5, 1})
	}
	if err := begin(); !errors.Is(err, errUncharged) {
		t.Fatalf("an uncharged Begin: %v, want errUncharged", err)
	}
	if n := o.lc.Out.Pending(); n != 0 {
		t.Fatalf("an uncharged Begin left %d effects", n)
	}
	o.dealing = &errDealing{} // as Release's send sets it (mechanism none: no noise)
	if err := begin(); err != nil {
		t.Fatalf("a charged Begin: %v", err)
	}
	if got := ownerShapes(o.lc.Take()); !reflect.DeepEqual(got, []string{"send sum shamir_share to bob", "send sum shamir_share to carol"}) {
		t.Fatalf("a charged Begin sent %q", got)
	}
}

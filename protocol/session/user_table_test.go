package session

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/lifecycle"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
	"google.golang.org/protobuf/proto"
)

// The data user's transition table in the drand style: from a named state,
// reached from a fresh user by the inputs listed, one input, to the
// lifecycle phase and user state after, the effects, the refusal (an
// error, and nothing done) and the drop counter it raises. No network, no
// driver, no clock: engine.Step feeds the machine, the table's time moves
// only when an input says so. After every input (setup and row) each phase
// change must be one lifecycle allows, and the user's state must agree with
// its phase.
//
// The rows hold what protocol/conformance plays at a data user — joins from
// peers the admission rule refuses, from sybils beyond the expected count,
// oversized and malformed joins, duplicate joins, joins after the roster,
// shares from owners not selected, second shares, shares of another
// attempt, garbage, sum messages from non-parties, owners refusing their
// Select, a stalled sum (its coordinator's timer), the step timer before
// enough owners joined, an abort — and the coordinators' timers routed by
// name.

// The table's actors: the user (userID, harness_test.go), owners
// owner-00… (utOwner), sybils and an outsider.
const (
	utMallory protocol.PeerID = "mallory"
	utSession                 = "table"
)

func utOwner(i int) protocol.PeerID { return protocol.PeerID(fmt.Sprintf("owner-%02d", i)) }
func utSybil(i int) protocol.PeerID { return protocol.PeerID(fmt.Sprintf("sybil-%02d", i)) }

// utFix is one row's world: a fresh user, the owners' data, the time.
type utFix struct {
	t    *testing.T
	data boost.Data
	u    *User
	now  time.Time
	cps  []Checkpoint
	// instance is the instance of the last SumStart sent, by purpose.
	instance map[string]uint32
}

// utVariant changes the base configuration: stumps, mechanism none, alpha
// by err sum, 2 rounds of 2 owners, Shamir sums, a closed session of 8
// known owners that starts when all 8 joined.
type utVariant func(f *utFix, c *UserConfig)

const utOwners = 12 // owners with data; the base session admits the first 8

func utConfig(f *utFix, variant utVariant) UserConfig {
	cfg := boost.DefaultConfig()
	cfg.Learner, cfg.Mechanism, cfg.Alpha = boost.Stump, "none", boost.AlphaSecureSum
	cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = 2, 2, 5
	sum := securesum.DefaultParams()
	sum.Method, sum.Committee, sum.Timeout = securesum.Shamir, 8, time.Second
	known := map[protocol.PeerID]bool{}
	for i := 0; i < 8; i++ {
		known[utOwner(i)] = true
	}
	c := UserConfig{Session: utSession, Boost: cfg, Sum: sum, Timing: testTiming(), Own: f.data.User, Test: f.data.Test,
		ExpectedOwners: 8, Admit: func(p protocol.PeerID) bool { return known[p] },
		SumRand: rng.Derive(5, 8), Log: testLog(f.t, "user"),
		Checkpoint: func(cp Checkpoint) { f.cps = append(f.cps, cp) }}
	if variant != nil {
		variant(f, &c)
	}
	return c
}

// Variants.
var (
	// utOpen admits anyone: 8 expected owners, the default join window
	// (3 announce intervals, 300 ms).
	utOpen utVariant = func(_ *utFix, c *UserConfig) { c.Admit = nil }
	// utLot is utOpen with a roster of at most 6, drawn by lot.
	utLot utVariant = func(_ *utFix, c *UserConfig) { c.Admit, c.MaxRoster = nil, 6 }
	// utValidation: alpha from the user's own data, one round.
	utValidation utVariant = func(_ *utFix, c *UserConfig) { c.Boost.Alpha, c.Boost.Rounds = boost.AlphaValidation, 1 }
	// utDistributed: distributed privacy (share sums), 4 owners a round
	// among 12.
	utDistributed utVariant = func(_ *utFix, c *UserConfig) {
		c.Boost.Privacy, c.Boost.Epsilon, c.Boost.OwnersPerRound, c.Boost.Significance = boost.PrivacyDistributed, 20, 4, 0
		c.Admit, c.ExpectedOwners = func(p protocol.PeerID) bool { return strings.HasPrefix(string(p), "owner-") }, utOwners
	}
	// utResume resumes from the checkpoint a base user wrote before its
	// first selection (round 1, attempt 1 next).
	utResume utVariant = func(f *utFix, c *UserConfig) {
		cp := utCheckpoint(f)
		c.Resume = &cp
	}
)

// utCheckpoint runs a base user to its first selection and returns the
// checkpoint it wrote just before it (resume at round 1, attempt 1).
func utCheckpoint(f *utFix) Checkpoint {
	g := &utFix{t: f.t, data: f.data, now: f.now}
	g.u = utNewUser(g, nil)
	for _, in := range utSeq(utStart(), utJoins(0, 8), utAcks(0, 8)) {
		g.step(in)
	}
	if len(g.cps) != 2 {
		f.t.Fatalf("the base user wrote %d checkpoints before its first selection, want 2 (roster, selection)", len(g.cps))
	}
	return g.cps[1]
}

func utNewUser(f *utFix, variant utVariant) *User {
	u, err := NewUser(userID, utNoPost{}, utConfig(f, variant))
	if err != nil {
		f.t.Fatal(err)
	}
	return u
}

type utNoPost struct{}

func (utNoPost) Send(protocol.PeerID, string, []byte) {}
func (utNoPost) Publish(string, []byte)               {}

// utIn is one input: the table's clock moves by after, then make builds
// the input from the user's state (the owners selected, the attempt).
type utIn struct {
	after time.Duration
	make  func(f *utFix) engine.Input
}

func utSeq(parts ...any) []utIn {
	var out []utIn
	for _, p := range parts {
		switch p := p.(type) {
		case utIn:
			out = append(out, p)
		case []utIn:
			out = append(out, p...)
		}
	}
	return out
}

func utStart() utIn {
	return utIn{make: func(*utFix) engine.Input { return engine.Message{From: userID, Protocol: localStart} }}
}

func utAbort() utIn {
	return utIn{make: func(*utFix) engine.Input {
		return engine.Message{From: userID, Protocol: localAbort, Data: []byte("interrupted")}
	}}
}

func utTimer(after time.Duration, name string) utIn {
	return utIn{after: after, make: func(*utFix) engine.Input { return engine.TimerFired{Name: name} }}
}

// utStep fires the step timer after d.
func utStep(d time.Duration) utIn { return utTimer(d, lifecycle.TimerStep) }

// utStalls are n expiries of the err sum's timer, 10 s apart.
func utStalls(n int) []utIn {
	var out []utIn
	for i := 0; i < n; i++ {
		out = append(out, utTimer(10*time.Second, "pairs/sum/err/1/0"))
	}
	return out
}

// utEnv marshals body under a header of the session (or another).
func utEnv(f *utFix, session string, round, attempt uint32, body proto.Message, max int) []byte {
	env, err := wire.Wrap(&wire.Header{Version: wire.Version, Session: session, Round: round, Attempt: attempt, Seq: 1}, body)
	if err != nil {
		f.t.Fatal(err)
	}
	b, err := wire.Marshal(env, max)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

func utDirect(from protocol.PeerID, round, attempt uint32, body func(f *utFix) proto.Message) utIn {
	return utIn{after: time.Millisecond, make: func(f *utFix) engine.Input {
		return engine.Message{From: from, Protocol: wire.ProtoSession, Data: utEnv(f, utSession, round, attempt, body(f), wire.MaxControlBytes)}
	}}
}

// rosterReq is owner i's RosterRequest for roster version 1.
func rosterReq(i int) utIn {
	return utDirect(utOwner(i), 0, 0, func(*utFix) proto.Message { return &wire.RosterRequest{Version: 1} })
}

// utJoinFrom is a well-formed Join from p (mutate changes it).
func utJoinFrom(p protocol.PeerID, mutate func(*wire.Join)) utIn {
	return utDirect(p, 0, 0, func(f *utFix) proto.Message {
		j := &wire.Join{SchemaDigest: f.u.wcfg.GetSchemaDigest(), Nonce: make([]byte, NonceBytes), Addrs: []string{"/ip4/127.0.0.1/tcp/1"}}
		j.Nonce[0] = byte(len(p))
		if mutate != nil {
			mutate(j)
		}
		return j
	})
}

// utEcho is p's LiveEcho of the check the user sent it (mutate changes
// the nonce; an unchecked peer echoes zeros).
func utEcho(p protocol.PeerID, mutate func([]byte) []byte) utIn {
	return utDirect(p, 0, 0, func(f *utFix) proto.Message {
		n := slices.Clone(f.u.joined[p].check)
		if n == nil {
			n = make([]byte, NonceBytes)
		}
		if mutate != nil {
			n = mutate(n)
		}
		return &wire.LiveEcho{Nonce: n}
	})
}

// utEchoes are the LiveEchoes of owners [from, to).
func utEchoes(from, to int) []utIn {
	var out []utIn
	for i := from; i < to; i++ {
		out = append(out, utEcho(utOwner(i), nil))
	}
	return out
}

// utAcks are the RosterAcks of owners [from, to) for version 1.
func utAcks(from, to int) []utIn {
	var out []utIn
	for i := from; i < to; i++ {
		out = append(out, utDirect(utOwner(i), 0, 0, func(*utFix) proto.Message { return &wire.RosterAck{Version: 1} }))
	}
	return out
}

// utJoins are the Joins of owners [from, to).
func utJoins(from, to int) []utIn {
	var out []utIn
	for i := from; i < to; i++ {
		out = append(out, utJoinFrom(utOwner(i), nil))
	}
	return out
}

func utSybils(n int) []utIn {
	var out []utIn
	for i := 0; i < n; i++ {
		out = append(out, utJoinFrom(utSybil(i), nil))
	}
	return out
}

// selected is the k-th (by id) owner selected for the attempt in flight.
func (f *utFix) selected(k int) protocol.PeerID {
	sel := make([]protocol.PeerID, 0, len(f.u.selected))
	for p := range f.u.selected {
		sel = append(sel, p)
	}
	slices.Sort(sel)
	if k >= len(sel) {
		f.t.Fatalf("selected owner %d of %d", k, len(sel))
	}
	return sel[k]
}

// utOwnerIndex is the data index of owner p.
func utOwnerIndex(f *utFix, p protocol.PeerID) int {
	var i int
	if _, err := fmt.Sscanf(string(p), "owner-%d", &i); err != nil {
		f.t.Fatalf("%s is not an owner", p)
	}
	return i
}

// utShareOf is the real share of the owner pick names, for the attempt in
// flight (dAttempt later: a share of another attempt), published on the
// shares topic; mutate changes it.
func utShareOf(pick func(f *utFix) protocol.PeerID, dAttempt uint32, mutate func(*wire.Share)) utIn {
	return utIn{after: time.Millisecond, make: func(f *utFix) engine.Input {
		p := pick(f)
		o, err := boost.NewOwner(f.data.Owners[utOwnerIndex(f, p)])
		if err != nil {
			f.t.Fatal(err)
		}
		sh, err := o.LocalShare(&f.u.us.Spec, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			f.t.Fatal(err)
		}
		w := &wire.Share{Values: sh.Values}
		for _, y := range sh.Labels {
			w.Labels = append(w.Labels, uint32(y))
		}
		if mutate != nil {
			mutate(w)
		}
		k := f.u.key
		return engine.Message{From: p, Topic: wire.TopicShares, Data: utEnv(f, utSession, k.round, k.attempt+dAttempt, w, wire.MaxShareBytes)}
	}}
}

func utShare(k int) utIn {
	return utShareOf(func(f *utFix) protocol.PeerID { return f.selected(k) }, 0, nil)
}

// utRefuse is the k-th selected owner refusing its Select.
func utRefuse(k int, dAttempt uint32) utIn {
	return utIn{after: time.Millisecond, make: func(f *utFix) engine.Input {
		p := f.selected(k)
		return engine.Message{From: p, Protocol: wire.ProtoSession,
			Data: utEnv(f, utSession, f.u.key.round, f.u.key.attempt+dAttempt, &wire.Refuse{Reason: "budget exhausted"}, wire.MaxControlBytes)}
	}}
}

// utRaw is a message of fixed bytes.
func utRaw(from protocol.PeerID, topic, protocolID string, data []byte) utIn {
	return utIn{after: time.Millisecond, make: func(*utFix) engine.Input {
		return engine.Message{From: from, Topic: topic, Protocol: protocolID, Data: data}
	}}
}

// utSum is a secure-sum message from p for the err sum in flight.
func utSum(from protocol.PeerID, kind wire.Sum_Kind) utIn {
	return utIn{after: time.Millisecond, make: func(f *utFix) engine.Input {
		k := f.u.key
		return engine.Message{From: from, Protocol: wire.ProtoShamir,
			Data: utEnv(f, utSession, k.round, k.attempt, &wire.Sum{Kind: kind, Purpose: PurposeErr, Instance: f.instance[PurposeErr]},
				wire.MaxSumFrameBytes)}
	}}
}

// step feeds one input; the phase change it causes must be valid and the
// user's state must agree with its phase afterwards.
func (f *utFix) step(in utIn) ([]engine.Effect, error) {
	f.t.Helper()
	f.now = f.now.Add(in.after)
	before := f.u.life.Phase()
	effects, err := engine.Step(f.u, f.now, in.make(f))
	for _, e := range effects {
		// Sum messages go to roster owners only, session messages to
		// peers that asked (roster requests).
		if s, ok := e.(engine.Send); ok && s.Protocol != wire.ProtoSession && (f.u.roster == nil || !slices.Contains(f.u.roster.IDs, s.To)) {
			f.t.Errorf("%s sent on %s to %s, outside the roster", utShape(e), s.Protocol, s.To)
		}
		if s, ok := e.(engine.Send); ok && s.Protocol == wire.ProtoShamir {
			if env, err := wire.Unmarshal(s.Data, wire.MaxSumFrameBytes); err == nil && env.GetSumStart() != nil {
				if f.instance == nil {
					f.instance = map[string]uint32{}
				}
				f.instance[env.GetSumStart().GetPurpose()] = env.GetSumStart().GetInstance()
			}
		}
	}
	if after := f.u.life.Phase(); after != before && !before.CanGo(after) {
		f.t.Errorf("phase %s → %s: not a valid move", before, after)
	}
	if err := utConsistent(f.u); err != nil {
		f.t.Error(err)
	}
	return effects, err
}

// utConsistent checks that the user's own state refines its phase.
func utConsistent(u *User) error {
	p := u.life.Phase()
	ok := false
	switch u.state {
	case UserJoining:
		ok = p == lifecycle.Idle || p == lifecycle.Admitting || (p == lifecycle.Running && u.cfg.Resume != nil)
	case UserRoster, UserShares, UserErrSum:
		ok = p == lifecycle.Running
	case UserDone:
		ok = p == lifecycle.Done
	case UserFailed:
		ok = p == lifecycle.Aborted || (p == lifecycle.Done && u.outcome.Kind == protocol.OutcomePartial)
	}
	if !ok {
		return fmt.Errorf("user state %s in phase %s", u.state, p)
	}
	return nil
}

// utShape names an effect: a publication or a session message by its
// body and round/attempt, a sum message by its kind, a timer by name (the
// step timer with its duration), a notification by its event.
func utShape(e engine.Effect) string {
	switch e := e.(type) {
	case engine.Publish:
		return fmt.Sprintf("publish %s", utBody(e.Data, wire.MaxControlBytes, e.Topic != wire.TopicControl))
	case engine.Send:
		switch e.Protocol {
		case wire.ProtoSession:
			body := utBody(e.Data, wire.MaxControlBytes, false)
			for _, direct := range []string{"Select ", "Learner ", "Alpha ", "Roster"} {
				if strings.HasPrefix(body, direct) {
					// An attempt's messages to the owners (toAudience,
					// sendSelect), or the roster's chunks (publishRoster), counted:
					// "send Select 1/0 ×2".
					return "send " + body
				}
			}
			return fmt.Sprintf("send %s to %s", body, e.To)
		case wire.ProtoShamir, wire.ProtoRing:
			return fmt.Sprintf("send %s", utBody(e.Data, wire.MaxSumFrameBytes, false))
		}
		return fmt.Sprintf("send on %s", e.Protocol)
	case engine.SetTimer:
		if e.Name == lifecycle.TimerStep || e.Name == timerAnnounce {
			return fmt.Sprintf("set %s %v", e.Name, e.After)
		}
		return "set " + e.Name
	case engine.CancelTimer:
		return "cancel " + e.Name
	case engine.Notify:
		switch v := e.Value.(type) {
		case RoundReport:
			return fmt.Sprintf("notify round %d/%d accepted=%v", v.Round, v.Attempt, v.Accepted)
		case SumTotal:
			return fmt.Sprintf("notify %s sum %d/%d", v.Purpose, v.Round, v.Attempt)
		case protocol.Outcome:
			return fmt.Sprintf("notify %s %s", e.Event, v.Kind)
		}
		return "notify " + e.Event.String()
	}
	return fmt.Sprintf("%T", e)
}

func utBody(data []byte, max int, badTopic bool) string {
	env, err := wire.Unmarshal(data, max)
	if err != nil || badTopic {
		return "garbage"
	}
	h := env.GetHeader()
	var name string
	switch b := env.GetBody().(type) {
	case *wire.Envelope_Sum:
		name = b.Sum.GetKind().String()
	default:
		name = strings.TrimPrefix(reflect.TypeOf(b).Elem().Name(), "Envelope_")
	}
	if h.GetRound() == 0 && h.GetAttempt() == 0 {
		return name
	}
	return fmt.Sprintf("%s %d/%d", name, h.GetRound(), h.GetAttempt())
}

// utShapes names the effects, runs of one shape counted ("send X ×8").
func utShapes(effs []engine.Effect) []string {
	out := []string{}
	run := 0
	for i, e := range effs {
		s := utShape(e)
		run++
		if i+1 < len(effs) && utShape(effs[i+1]) == s {
			continue
		}
		if run > 1 {
			s = fmt.Sprintf("%s ×%d", s, run)
		}
		out = append(out, s)
		run = 0
	}
	return out
}

type utRow struct {
	name    string
	variant utVariant
	setup   []utIn
	in      utIn
	phase   lifecycle.Phase
	state   UserState
	effects []string
	err     error
	drop    string           // the counter the input raises by one
	check   func(*utFix) any // extra assertion: returns what is wrong, or nil
}

func TestUserTransitions(t *testing.T) {
	data, err := boost.Prepare(boost.DataSpec{Source: "synthetic", Owners: utOwners, SamplesPerOwner: 20, UserSamples: 300,
		TestSamples: 300, Seed: 5}, boost.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	const (
		admitting = lifecycle.Admitting
		running   = lifecycle.Running
	)
	announce := "set step 100ms"
	// The states, each reached from a fresh user by these inputs.
	var (
		started    = utSeq(utStart())
		sevenIn    = utSeq(started, utJoins(0, 7))
		rostered   = utSeq(started, utJoins(0, 8)) // the 8th join publishes the roster
		shares     = utSeq(rostered, utAcks(0, 8)) // the 8th ack starts round 1
		oneShare   = utSeq(shares, utShare(0))
		oneRefusal = utSeq(shares, utRefuse(0, 0))
		errSum     = utSeq(oneShare, utShare(1))
		aborted    = utSeq(started, utAbort())
		// The learner and the err sum's start: a Shamir SumStart to each
		// of the 8 roster owners, and the sum's timer.
		errSumStart = []string{"send Learner 1/0 ×8", "send SumStart 1/0 ×8", "set pairs/sum/err/1/0"}
	)
	joinCount := func(n int) func(*utFix) any {
		return func(f *utFix) any {
			if len(f.u.joined) != n {
				return fmt.Sprintf("%d joined, want %d", len(f.u.joined), n)
			}
			return nil
		}
	}
	rosterSize := func(n int) func(*utFix) any {
		return func(f *utFix) any {
			if f.u.roster == nil || len(f.u.roster.IDs) != n {
				return fmt.Sprintf("roster %v, want %d owners", f.u.roster, n)
			}
			return nil
		}
	}
	live := func(p protocol.PeerID, want bool) func(*utFix) any {
		return func(f *utFix) any {
			if got := f.u.joined[p].live; got != want {
				return fmt.Sprintf("%s live %v, want %v", p, got, want)
			}
			return nil
		}
	}
	// selectedAmong: every selected owner is one of owners [from, to).
	selectedAmong := func(from, to int) func(*utFix) any {
		return func(f *utFix) any {
			for p := range f.u.selected {
				var i int
				if _, err := fmt.Sscanf(string(p), "owner-%d", &i); err != nil || i < from || i >= to {
					return fmt.Sprintf("selected %s, want one of owners %d..%d (the ones that echoed)", p, from, to-1)
				}
			}
			return nil
		}
	}
	rosterVersion := func(v uint32, n int) func(*utFix) any {
		return func(f *utFix) any {
			if r := f.u.roster; r == nil || r.Version != v || len(r.IDs) != n {
				return fmt.Sprintf("roster %v, want version %d of %d owners", r, v, n)
			}
			return nil
		}
	}
	// openShares: an open session of 8 owners, all echoed, in its first
	// attempt's shares.
	openShares := utSeq(started, utJoins(0, 8), utEchoes(0, 8), utStep(300*time.Millisecond), utAcks(0, 8))
	outcome := func(kind protocol.OutcomeKind) func(*utFix) any {
		return func(f *utFix) any {
			if f.u.outcome.Kind != kind {
				return fmt.Sprintf("outcome %s, want %s", f.u.outcome, kind)
			}
			return nil
		}
	}
	rows := []utRow{
		// Start and the join phase.
		{name: "start announces", in: utStart(), phase: admitting, state: UserJoining,
			effects: []string{"publish Announce", announce}},
		{name: "second start", setup: started, in: utStart(), phase: admitting, state: UserJoining, err: protocol.ErrUnexpected},
		{name: "start command from a peer", in: utIn{make: func(*utFix) engine.Input {
			return engine.Message{From: utMallory, Protocol: localStart}
		}}, phase: lifecycle.Idle, state: UserJoining, err: protocol.ErrUnexpected, drop: protocol.ErrUnexpected.Error()},
		{name: "join", setup: started, in: utJoinFrom(utOwner(0), nil), phase: admitting, state: UserJoining,
			effects: []string{"send LiveCheck to owner-00"}, check: joinCount(1)},
		{name: "duplicate join: the same check again", setup: utSeq(started, utJoins(0, 1)), in: utJoinFrom(utOwner(0), nil), phase: admitting,
			state: UserJoining, effects: []string{"send LiveCheck to owner-00"}, check: joinCount(1)},
		{name: "join of an owner that echoed: no check", setup: utSeq(started, utJoins(0, 1), utEcho(utOwner(0), nil)),
			in: utJoinFrom(utOwner(0), nil), phase: admitting, state: UserJoining, effects: []string{}, check: joinCount(1)},
		{name: "liveness echo", setup: utSeq(started, utJoins(0, 1)), in: utEcho(utOwner(0), nil), phase: admitting,
			state: UserJoining, effects: []string{}, check: live(utOwner(0), true)},
		{name: "second liveness echo", setup: utSeq(started, utJoins(0, 1), utEcho(utOwner(0), nil)), in: utEcho(utOwner(0), nil),
			phase: admitting, state: UserJoining, err: protocol.ErrDuplicateShare, drop: protocol.ErrDuplicateShare.Error()},
		{name: "liveness echo of another nonce", setup: utSeq(started, utJoins(0, 1)), in: utEcho(utOwner(0), func(b []byte) []byte {
			b[0] ^= 1
			return b
		}), phase: admitting, state: UserJoining, err: ErrLiveness, drop: ErrLiveness.Error(), check: live(utOwner(0), false)},
		{name: "oversized liveness echo", setup: utSeq(started, utJoins(0, 1)), in: utEcho(utOwner(0), func(b []byte) []byte {
			return make([]byte, 1<<10)
		}), phase: admitting, state: UserJoining, err: ErrLiveness, drop: ErrLiveness.Error(), check: live(utOwner(0), false)},
		{name: "liveness echo from a peer never checked", setup: started, in: utEcho(utMallory, nil), phase: admitting,
			state: UserJoining, err: ErrLiveness, drop: ErrLiveness.Error()},
		{name: "join from a peer the admission rule refuses", setup: started, in: utJoinFrom(utMallory, nil), phase: admitting,
			state: UserJoining, err: protocol.ErrBadConfig, drop: protocol.ErrBadConfig.Error(), check: joinCount(0)},
		{name: "join with another schema", setup: started, in: utJoinFrom(utOwner(0), func(j *wire.Join) { j.SchemaDigest = "other" }),
			phase: admitting, state: UserJoining, err: protocol.ErrBadConfig, drop: protocol.ErrBadConfig.Error()},
		{name: "join without a nonce", setup: started, in: utJoinFrom(utOwner(0), func(j *wire.Join) { j.Nonce = nil }),
			phase: admitting, state: UserJoining, err: protocol.ErrBadConfig, drop: protocol.ErrBadConfig.Error()},
		{name: "join with too many addresses", setup: started, in: utJoinFrom(utOwner(0), func(j *wire.Join) {
			j.Addrs = make([]string, maxJoinAddrs+1)
		}), phase: admitting, state: UserJoining, err: protocol.ErrBadConfig, drop: protocol.ErrBadConfig.Error()},
		{name: "oversized join", setup: started, in: utIn{make: func(f *utFix) engine.Input {
			big := make([]string, 20) // 1.2 MB: over wire.MaxControlBytes
			for i := range big {
				big[i] = strings.Repeat("x", 60<<10)
			}
			env, _ := wire.Wrap(&wire.Header{Version: wire.Version, Session: utSession, Seq: 1}, &wire.Join{Addrs: big})
			raw, _ := proto.Marshal(env)
			return engine.Message{From: utMallory, Protocol: wire.ProtoSession, Data: raw}
		}}, phase: admitting, state: UserJoining, err: wire.ErrTooLarge, drop: "malformed"},
		{name: "an owner will not join", setup: started, in: utDirect(utOwner(0), 0, 0, func(*utFix) proto.Message {
			return &wire.Refuse{Reason: "budget exhausted"}
		}), phase: admitting, state: UserJoining, effects: []string{}, check: func(f *utFix) any {
			if f.u.notJoined[utOwner(0)] != "budget exhausted" {
				return f.u.notJoined
			}
			return nil
		}},
		{name: "the expected owners joined: the roster, and a wait for the owners to hold it", setup: sevenIn, in: utJoinFrom(utOwner(7), nil),
			phase: running, state: UserRoster,
			effects: []string{"send LiveCheck to owner-07", "cancel step", "publish RosterHead", "send Roster ×8", "set step 5s"}, check: rosterSize(8)},
		{name: "roster ack: waits the quiet interval for more", setup: rostered, in: utAcks(0, 1)[0], phase: running, state: UserRoster,
			effects: []string{"set step 100ms"}},
		{name: "roster ack 1 s after the roster: waits as long again for more", setup: rostered,
			in: utIn{after: time.Second, make: utAcks(0, 1)[0].make}, phase: running, state: UserRoster, effects: []string{"set step 1s"}},
		{name: "second roster ack from an owner: nothing", setup: utSeq(rostered, utAcks(0, 1)), in: utAcks(0, 1)[0], phase: running,
			state: UserRoster, effects: []string{}},
		{name: "roster ack from outside the roster", setup: rostered, in: utDirect(utMallory, 0, 0, func(*utFix) proto.Message { return &wire.RosterAck{Version: 1} }),
			phase: running, state: UserRoster, err: protocol.ErrUnexpected, drop: protocol.ErrUnexpected.Error()},
		{name: "roster ack of another version: nothing", setup: rostered, in: utDirect(utOwner(0), 0, 0, func(*utFix) proto.Message { return &wire.RosterAck{Version: 2} }),
			phase: running, state: UserRoster, effects: []string{}},
		{name: "the last roster ack: selection", setup: utSeq(rostered, utAcks(0, 7)), in: utAcks(7, 8)[0], phase: running, state: UserShares,
			effects: []string{"cancel step", "send Select 1/0 ×2", "set step 2s", "send Select 1/0 ×6"}},
		{name: "no ack for the quiet interval after the last: selection", setup: utSeq(rostered, utAcks(0, 5)), in: utStep(100 * time.Millisecond),
			phase: running, state: UserShares, effects: []string{"send Select 1/0 ×2", "set step 2s", "send Select 1/0 ×6"}},
		{name: "no ack by the join timeout: selection", setup: rostered, in: utStep(5 * time.Second),
			phase: running, state: UserShares, effects: []string{"send Select 1/0 ×2", "set step 2s", "send Select 1/0 ×6"}},
		{name: "roster ack after the selection: nothing", setup: utSeq(rostered, utStep(5*time.Second)), in: utAcks(0, 1)[0],
			phase: running, state: UserShares, effects: []string{}},
		{name: "step before the join timeout: announce again", setup: sevenIn, in: utStep(100 * time.Millisecond),
			phase: admitting, state: UserJoining, effects: []string{"publish Announce", announce}},
		{name: "step at the join timeout, too few owners: fail", setup: utSeq(started, utJoins(0, 2)), in: utStep(5 * time.Second),
			phase: lifecycle.Aborted, state: UserFailed,
			effects: []string{"publish Abort", "cancel idle", "cancel step", "notify aborted failed"}, check: outcome(protocol.OutcomeFailed)},
		// None of the 7 echoed its check within its grace: none is waited
		// for past an announce interval (mayAnswer).
		{name: "step at the join timeout, enough owners: start with them; none answered its check", setup: sevenIn, in: utStep(5 * time.Second),
			phase: running, state: UserRoster, effects: []string{"publish RosterHead", "send Roster ×7", "set step 100ms"}, check: rosterSize(7)},
		{name: "step at the join timeout, no room for the plan: fail", setup: utSeq(started, utJoins(0, 5)), in: utStep(5 * time.Second),
			phase: lifecycle.Aborted, state: UserFailed,
			effects: []string{"publish Abort", "cancel idle", "cancel step", "notify aborted failed"}},
		{name: "open session: the expected count inside the join window does not start", variant: utOpen,
			setup: utSeq(started, utJoins(0, 4)), in: utJoinFrom(utSybil(0), nil), phase: admitting, state: UserJoining,
			effects: []string{"send LiveCheck to sybil-00"}, check: joinCount(5)},
		{name: "open session: sybils beyond the expected count are in the roster", variant: utOpen,
			setup: utSeq(started, utJoins(0, 8), utSybils(3)), in: utStep(300 * time.Millisecond), phase: running, state: UserRoster,
			effects: []string{"publish RosterHead", "send Roster ×11", "set announce 100ms", "set step 100ms"}, check: rosterSize(11)},
		// The last ack of the owners that echoed starts the selection:
		// owners 0 and 1 and the sybils never answered (mayAnswer).
		{name: "open session: selection passes over joiners that never echoed", variant: utOpen,
			setup: utSeq(started, utJoins(0, 8), utEchoes(2, 8), utSybils(3), utStep(300*time.Millisecond), utAcks(2, 7)), in: utAcks(7, 8)[0], phase: running,
			state: UserShares, effects: []string{"cancel step", "send Select 1/0 ×2", "set step 2s", "send Select 1/0 ×9"},
			check: selectedAmong(2, 8)},
		{name: "open session: a join after the roster is held for version 2", variant: utOpen, setup: openShares,
			in: utJoinFrom(utOwner(8), nil), phase: running, state: UserShares, effects: []string{"send LiveCheck to owner-08"},
			check: joinCount(9)},
		{name: "open session: re-announced while it takes late joins", variant: utOpen, setup: openShares,
			in: utTimer(100*time.Millisecond, timerAnnounce), phase: running, state: UserShares,
			effects: []string{"publish Announce", "set announce 200ms"}},
		// A re-announcement never joins an attempt's start burst on the
		// user's uplink: one due within the attempt's first round trip
		// (the largest smoothed RTT from the joins: owner 7 joined 8 ms
		// after the Announce) waits until it has passed.
		{name: "open session: a re-announcement due in an attempt's first round trip waits for it", variant: utOpen, setup: openShares,
			in: utTimer(0, timerAnnounce), phase: running, state: UserShares, effects: []string{"set announce 8ms"}},
		{name: "open session: the waiting re-announcement goes one round trip after the attempt's start", variant: utOpen,
			setup: utSeq(openShares, utTimer(0, timerAnnounce)), in: utTimer(8*time.Millisecond, timerAnnounce), phase: running, state: UserShares,
			effects: []string{"publish Announce", "set announce 200ms"}},
		// Each running re-announcement waits twice as long as the last, up
		// to 8 intervals (the interval is 100 ms here).
		{name: "open session: running re-announcements slow down to 8 intervals", variant: utOpen,
			setup: utSeq(openShares, utTimer(100*time.Millisecond, timerAnnounce), utTimer(200*time.Millisecond, timerAnnounce),
				utTimer(400*time.Millisecond, timerAnnounce), utTimer(800*time.Millisecond, timerAnnounce)),
			in: utTimer(800*time.Millisecond, timerAnnounce), phase: running, state: UserShares,
			effects: []string{"publish Announce", "set announce 800ms"}},
		{name: "open session: a late owner that echoed enters roster version 2 at the next attempt", variant: utOpen,
			setup: utSeq(openShares, utJoinFrom(utOwner(8), nil), utEcho(utOwner(8), nil)), in: utStep(2 * time.Second),
			phase: running, state: UserShares, effects: []string{"notify round 1/0 accepted=false", "publish RosterHead", "send Roster ×9", "send Select 1/1 ×2", "set step 2s", "send Select 1/1 ×7"},
			check: rosterVersion(2, 9)},
		{name: "open session with a roster cap: no room, no growth", variant: utLot,
			setup: utSeq(started, utJoins(0, 6), utEchoes(0, 6), utStep(5*time.Second), utAcks(0, 6), utJoinFrom(utOwner(6), nil),
				utEcho(utOwner(6), nil)), in: utStep(2 * time.Second), phase: running, state: UserShares,
			effects: []string{"notify round 1/0 accepted=false", "send Select 1/1 ×2", "set step 2s", "send Select 1/1 ×5"}, check: rosterVersion(1, 6)},
		{name: "open session: a late joiner that never echoed stays out", variant: utOpen,
			setup: utSeq(openShares, utJoinFrom(utOwner(8), nil)), in: utStep(2 * time.Second),
			phase: running, state: UserShares, effects: []string{"notify round 1/0 accepted=false", "send Select 1/1 ×2", "set step 2s", "send Select 1/1 ×6"}, // not to the joiner that never echoed
			check: rosterVersion(1, 8)},
		{name: "open session with a roster cap: drawn by lot", variant: utLot,
			setup: utSeq(started, utJoins(0, 8), utSybils(3)), in: utStep(300 * time.Millisecond), phase: running, state: UserRoster,
			effects: []string{"publish RosterHead", "send Roster ×11", "set announce 100ms", "set step 100ms"}, check: rosterSize(6)},
		{name: "join after the roster", setup: shares, in: utJoinFrom(utOwner(8), nil), phase: running, state: UserShares,
			err: protocol.ErrWrongRound, drop: protocol.ErrWrongRound.Error()},
		{name: "roster request", setup: shares, in: utDirect(utOwner(3), 0, 0, func(*utFix) proto.Message {
			return &wire.RosterRequest{Version: 1}
		}), phase: running, state: UserShares, effects: []string{"send Roster"}},
		{name: "second roster request (the answer was lost): answered", setup: utSeq(shares, rosterReq(3)), in: rosterReq(3),
			phase: running, state: UserShares, effects: []string{"send Roster"}},
		{name: "fourth roster request: refused", setup: utSeq(shares, rosterReq(3), rosterReq(3), rosterReq(3)), in: rosterReq(3),
			phase: running, state: UserShares, err: protocol.ErrDuplicateShare, drop: protocol.ErrDuplicateShare.Error()},
		{name: "roster request from outside the roster", setup: shares, in: utDirect(utMallory, 0, 0, func(*utFix) proto.Message {
			return &wire.RosterRequest{Version: 1}
		}), phase: running, state: UserShares, err: protocol.ErrWrongRound, drop: protocol.ErrWrongRound.Error()},

		// Shares and refusals.
		{name: "share", setup: shares, in: utShare(0), phase: running, state: UserShares, effects: []string{}},
		{name: "last share: learner and err sum", setup: oneShare, in: utShare(1), phase: running, state: UserErrSum,
			effects: utSeqS("cancel step", errSumStart)},
		{name: "share from an owner not selected", setup: shares, in: utShareOf(func(f *utFix) protocol.PeerID {
			for i := 0; ; i++ {
				if !f.u.selected[utOwner(i)] {
					return utOwner(i)
				}
			}
		}, 0, nil), phase: running, state: UserShares, err: protocol.ErrNotSelected, drop: protocol.ErrNotSelected.Error()},
		{name: "second share", setup: oneShare, in: utShare(0), phase: running, state: UserShares,
			err: protocol.ErrDuplicateShare, drop: protocol.ErrDuplicateShare.Error()},
		{name: "share of another attempt", setup: shares, in: utShareOf(func(f *utFix) protocol.PeerID { return f.selected(0) }, 1, nil),
			phase: running, state: UserShares, err: protocol.ErrWrongRound, drop: protocol.ErrWrongRound.Error()},
		{name: "share that does not fit the session", setup: shares, in: utShareOf(func(f *utFix) protocol.PeerID { return f.selected(0) }, 0,
			func(s *wire.Share) { s.Values = s.Values[:1] }), phase: running, state: UserShares,
			err: protocol.ErrBadShare, drop: protocol.ErrBadShare.Error()},
		{name: "share while joining", setup: started, in: utShareOf(func(*utFix) protocol.PeerID { return utOwner(0) }, 0, nil),
			phase: admitting, state: UserJoining, err: protocol.ErrWrongRound, drop: protocol.ErrWrongRound.Error()},
		{name: "garbage", setup: shares, in: utRaw(utMallory, wire.TopicShares, "", []byte{0xff, 1, 2, 3}), phase: running,
			state: UserShares, err: wire.ErrMalformed, drop: "malformed"},
		{name: "garbage on the sum stream", setup: shares, in: utRaw(utMallory, "", wire.ProtoShamir, []byte{0xff, 1, 2, 3}),
			phase: running, state: UserShares, err: wire.ErrMalformed, drop: "malformed"},
		{name: "another session", setup: shares, in: utIn{after: time.Millisecond, make: func(f *utFix) engine.Input {
			return engine.Message{From: f.selected(0), Topic: wire.TopicShares,
				Data: utEnv(f, "other", 1, 0, &wire.Share{Values: []float64{1}}, wire.MaxShareBytes)}
		}}, phase: running, state: UserShares, err: protocol.ErrWrongSession, drop: protocol.ErrWrongSession.Error()},
		{name: "a control message sent to the user", setup: shares, in: utDirect(utMallory, 1, 0, func(*utFix) proto.Message {
			return &wire.Alpha{Alpha: 50, Accepted: true}
		}), phase: running, state: UserShares, err: protocol.ErrUnexpected, drop: protocol.ErrUnexpected.Error()},
		{name: "an owner refuses its Select", setup: shares, in: utRefuse(0, 0), phase: running, state: UserShares, effects: []string{},
			check: func(f *utFix) any {
				if len(f.u.selected) != 1 || f.u.refusals["budget exhausted"] != 1 {
					return fmt.Sprintf("selected %d, refusals %v", len(f.u.selected), f.u.refusals)
				}
				return nil
			}},
		{name: "the last selected owner refuses: learner from the one share", setup: oneShare, in: utRefuse(1, 0),
			phase: running, state: UserErrSum, effects: utSeqS("cancel step", errSumStart)},
		{name: "every selected owner refuses: next attempt", setup: oneRefusal, in: utRefuse(0, 0), phase: running, state: UserShares,
			effects: []string{"cancel step", "notify round 1/0 accepted=false", "send Select 1/1 ×2", "set step 2s", "send Select 1/1 ×6"}},
		{name: "refusal of another attempt", setup: shares, in: utRefuse(0, 1), phase: running, state: UserShares,
			err: protocol.ErrWrongRound, drop: protocol.ErrWrongRound.Error()},
		{name: "refusal after its share", setup: oneShare, in: utRefuse(0, 0), phase: running, state: UserShares,
			err: protocol.ErrDuplicateShare, drop: protocol.ErrDuplicateShare.Error()},
		{name: "share deadline with one share: learner from it", setup: oneShare, in: utStep(2 * time.Second), phase: running,
			state: UserErrSum, effects: errSumStart},
		{name: "share deadline with no share: next attempt", setup: shares, in: utStep(2 * time.Second), phase: running, state: UserShares,
			effects: []string{"notify round 1/0 accepted=false", "send Select 1/1 ×2", "set step 2s", "send Select 1/1 ×6"}},
		{name: "share deadlines until no unused owner is left: fail", setup: utSeq(shares, utStep(2*time.Second), utStep(2*time.Second),
			utStep(2*time.Second)), in: utStep(2 * time.Second), phase: lifecycle.Aborted, state: UserFailed,
			effects: []string{"notify round 1/3 accepted=false", "publish Abort 1/4", "cancel idle", "cancel step", "notify aborted failed"},
			check: func(f *utFix) any {
				if !errors.Is(f.u.err, boost.ErrOutOfOwners) {
					return f.u.err
				}
				return nil
			}},
		{name: "share deadline of the last attempt allowed: fail", variant: func(_ *utFix, c *UserConfig) { c.Boost.MaxAttempts = 1 },
			setup: shares, in: utStep(2 * time.Second), phase: lifecycle.Aborted, state: UserFailed,
			effects: []string{"notify round 1/0 accepted=false", "publish Abort 1/0", "cancel idle", "cancel step", "notify aborted failed"},
			check: func(f *utFix) any {
				if !errors.Is(f.u.err, boost.ErrNoProgress) {
					return f.u.err
				}
				return nil
			}},
		{name: "stale step timer", setup: errSum, in: utStep(2 * time.Second), phase: running, state: UserErrSum, effects: []string{}},

		// The err sum: its coordinator's messages and timer.
		{name: "sum message from a non-party", setup: errSum, in: utSum(utMallory, wire.Sum_SHAMIR_HOLDING), phase: running,
			state: UserErrSum, err: errSumRefused, drop: "sum: not a participant"},
		{name: "sum message for no instance", setup: shares, in: utSum(utOwner(0), wire.Sum_SHAMIR_HOLDING), phase: running,
			state: UserShares, err: errSumRefused, drop: "sum: late"},
		{name: "stalled err sum: its timer asks the committee", setup: errSum, in: utTimer(time.Second, "pairs/sum/err/1/0"),
			phase: running, state: UserErrSum,
			effects: []string{"send SumStart 1/0 ×8", "send SHAMIR_REPORT 1/0 ×8", "set pairs/sum/err/1/0"}},
		{name: "stalled err sum, no member answers until the end: the session fails after the coordinator's bookkeeping",
			setup: utSeq(errSum, utStalls(9)), in: utTimer(10*time.Second, "pairs/sum/err/1/0"), phase: lifecycle.Aborted, state: UserFailed,
			effects: []string{"cancel pairs/sum/err/1/0", "publish Abort 1/0", "cancel idle", "cancel step", "notify aborted failed"},
			check: func(f *utFix) any {
				if !errors.Is(f.u.err, securesum.ErrTooFew) {
					return f.u.err
				}
				return nil
			}},
		{name: "err sum timer of another attempt", setup: errSum, in: utTimer(time.Second, "pairs/sum/err/1/1"), phase: running,
			state: UserErrSum, effects: []string{}},
		{name: "a share-sum timer without distributed privacy", setup: errSum, in: utTimer(time.Second, "shares/sum/share/1/0"),
			phase: running, state: UserErrSum, err: errUserTimer},
		{name: "unknown timer", setup: shares, in: utTimer(time.Second, "idle"), phase: running, state: UserShares, err: errUserTimer},

		// The end.
		{name: "abort while admitting", setup: started, in: utAbort(), phase: lifecycle.Aborted, state: UserFailed,
			effects: []string{"publish Abort", "cancel idle", "cancel step", "notify aborted failed"}, check: outcome(protocol.OutcomeFailed)},
		{name: "abort while running", setup: errSum, in: utAbort(), phase: lifecycle.Aborted, state: UserFailed,
			effects: []string{"cancel pairs/sum/err/1/0", "publish Abort 1/0", "cancel idle", "cancel step", "notify aborted failed"}},
		{name: "a stopped sum's timer after the abort", setup: utSeq(errSum, utAbort()), in: utTimer(time.Second, "pairs/sum/err/1/0"),
			phase: lifecycle.Aborted, state: UserFailed, effects: []string{}},
		{name: "abort before the start", in: utAbort(), phase: lifecycle.Aborted, state: UserFailed,
			effects: []string{"publish Abort", "cancel idle", "cancel step", "notify aborted failed"}},
		{name: "start after an abort", setup: utSeq(utAbort()), in: utStart(), phase: lifecycle.Aborted, state: UserFailed,
			err: protocol.ErrUnexpected},
		{name: "abort after the end", setup: aborted, in: utAbort(), phase: lifecycle.Aborted, state: UserFailed, effects: []string{}},
		{name: "join after the end", setup: aborted, in: utJoinFrom(utOwner(0), nil), phase: lifecycle.Aborted, state: UserFailed,
			err: protocol.ErrWrongRound, drop: protocol.ErrWrongRound.Error()},
		{name: "step timer after the end", setup: aborted, in: utStep(time.Second), phase: lifecycle.Aborted, state: UserFailed,
			effects: []string{}},
		{name: "validation alpha: the last share ends the session", variant: utValidation, setup: utSeq(shares, utShare(0)),
			in: utShare(1), phase: lifecycle.Done, state: UserDone,
			effects: []string{"cancel step", "send Learner 1/0 ×8", "send Alpha 1/0 ×8", "notify round 1/0 accepted=true",
				"publish Final 1/0", "cancel idle", "cancel step", "notify final complete"}, check: outcome(protocol.OutcomeComplete)},

		// Distributed privacy: the share sum is the second coordinator's.
		{name: "distributed: the last roster ack starts a share sum", variant: utDistributed, setup: utSeq(started, utJoins(0, utOwners), utAcks(0, utOwners-1)),
			in: utAcks(utOwners-1, utOwners)[0], phase: running, state: UserShares,
			effects: []string{"cancel step", "send Select 1/0 ×6", "send SumStart 1/0 ×6", "set shares/sum/share/1/0", "send Select 1/0 ×6"}},
		{name: "distributed: a share in the clear", variant: utDistributed, setup: utSeq(started, utJoins(0, utOwners), utAcks(0, utOwners)),
			in: utShare(0), phase: running, state: UserShares, err: protocol.ErrUnexpected, drop: protocol.ErrUnexpected.Error()},
		{name: "distributed: the share sum's timer is routed to it", variant: utDistributed, setup: utSeq(started, utJoins(0, utOwners), utAcks(0, utOwners)),
			in: utTimer(time.Second, "shares/sum/share/1/0"), phase: running, state: UserShares,
			effects: []string{"send SumStart 1/0 ×6", "send SHAMIR_REPORT 1/0 ×4", "set shares/sum/share/1/0"}},

		// Resuming from a checkpoint: the roster is known (Running).
		{name: "resume: start re-announces", variant: utResume, in: utStart(), phase: running, state: UserJoining,
			effects: []string{"publish Announce", announce}},
		{name: "resume: the step publishes the roster and selects afresh", variant: utResume, setup: utSeq(utStart()),
			in: utStep(100 * time.Millisecond), phase: running, state: UserShares,
			effects: []string{"publish RosterHead", "send Roster ×8", "send Select 1/1 ×2", "set step 2s", "send Select 1/1 ×6"}},
		{name: "resume: join", variant: utResume, setup: utSeq(utStart()), in: utJoinFrom(utOwner(0), nil), phase: running,
			state: UserJoining, err: protocol.ErrWrongRound, drop: protocol.ErrWrongRound.Error()},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			f := &utFix{t: t, data: data, now: time.Unix(1_700_000_000, 0)}
			f.u = utNewUser(f, r.variant)
			for i, in := range r.setup {
				if _, err := f.step(in); err != nil {
					t.Fatalf("setup input %d: %v", i, err)
				}
			}
			before := f.u.Stats().Snapshot()
			effs, err := f.step(r.in)
			if !errors.Is(err, r.err) || (err != nil) != (r.err != nil) {
				t.Fatalf("error %v, want %v", err, r.err)
			}
			if f.u.life.Phase() != r.phase || f.u.state != r.state {
				t.Errorf("phase %s, state %s; want %s, %s", f.u.life.Phase(), f.u.state, r.phase, r.state)
			}
			if r.err != nil {
				if len(effs) != 0 {
					t.Errorf("a refused input had effects %q", utShapes(effs))
				}
			} else if got := utShapes(effs); !reflect.DeepEqual(got, r.effects) {
				t.Errorf("effects\n got %q\nwant %q", got, r.effects)
			}
			after := f.u.Stats().Snapshot()
			if r.drop != "" && after[r.drop] != before[r.drop]+1 {
				t.Errorf("counter %q went from %d to %d, want one more", r.drop, before[r.drop], after[r.drop])
			}
			if r.drop == "" && !reflect.DeepEqual(before, after) {
				t.Errorf("counters changed from %v to %v", before, after)
			}
			if r.check != nil {
				if bad := r.check(f); bad != nil {
					t.Error(bad)
				}
			}
		})
	}
}

// utSeqS joins shapes.
func utSeqS(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			out = append(out, p)
		case []string:
			out = append(out, p...)
		}
	}
	return out
}

// TestUserCallbacksFromNotify: on a runner, the machine's notifications
// reach the configuration's callbacks in order — each err sum's total
// (OnSum) before its attempt's report (OnRound), then OnDone and OnOutcome
// once — between events, so that each callback can read the user's state
// (Snapshot runs on the driver: it would wait for itself if a callback ran
// inside an event), which already shows the event that notified.
func TestUserCallbacksFromNotify(t *testing.T) {
	c := newCluster(t, 8, func(_ *boost.Config, p *securesum.Params) { p.Method = securesum.Shamir })
	var calls []string
	c.userCfg = func(u *UserConfig) {
		u.OnSum = func(purpose string, r, a int, total []float64, parties int) {
			calls = append(calls, fmt.Sprintf("sum %s %d/%d of %d", purpose, r, a, parties))
		}
		u.OnRound = func(r RoundReport) {
			s := c.user.Snapshot()
			calls = append(calls, fmt.Sprintf("round %d/%d of %d, accepted %v, %d in the model", r.Round, r.Attempt, r.SumCovers,
				r.Accepted, len(s.Ensemble.Rounds)))
		}
		done := u.OnDone
		u.OnDone = func(m *boost.Model, err error) {
			st, _ := c.user.State()
			calls = append(calls, fmt.Sprintf("done %s, %d rounds", st, len(m.Rounds)))
			done(m, err)
		}
		u.OnOutcome = func(out protocol.Outcome) {
			calls = append(calls, fmt.Sprintf("outcome %s, snapshot %s", out.Kind, c.user.Snapshot().Outcome.Kind))
		}
	}
	c.startUser(t, nil)
	c.run(time.Minute)
	if !c.done || c.err != nil {
		t.Fatalf("done %v, err %v", c.done, c.err)
	}
	want := []string{
		"sum err 1/0 of 8", "round 1/0 of 8, accepted true, 1 in the model",
		"sum err 2/0 of 8", "round 2/0 of 8, accepted true, 2 in the model",
		"done done, 2 rounds", "outcome complete, snapshot complete",
	}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("callbacks\n got %q\nwant %q", calls, want)
	}
	if p := c.user.Phase(); p != lifecycle.Done {
		t.Fatalf("phase %s after the final, want done", p)
	}
}

package status

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/session"
)

// Bounds of what a Board keeps.
const (
	MaxRounds = session.SnapshotMaxRounds // round attempts kept (the newest)
	MaxEvents = 200                       // owner events kept (the newest)
	// minInterval is the shortest time between two snapshots of the node:
	// however many clients poll, the loop is read at most this often.
	minInterval = 500 * time.Millisecond
)

// Num is a float that encodes NaN and ±Inf as JSON null.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// Status is the JSON of /status.json and what the page renders.
type Status struct {
	Role    string `json:"role"` // "data user" or "owner"
	Peer    string `json:"peer"`
	Session string `json:"session"`
	State   string `json:"state"`
	Error   string `json:"error,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	// OutcomeKind is the outcome's kind once the session ended: "complete"
	// (every planned round kept), "partial" (some kept: a model is written
	// and the CLI exits 3) or "failed" (no model); "" while it runs. It is
	// the kind of the session's own protocol.Outcome, the one the CLI's
	// exit status comes from.
	OutcomeKind string `json:"outcome_kind,omitempty"`
	// Badge is what the page's badge says (and its CSS class): the
	// outcome's kind once the session ended, else the state. A partial
	// session's state is "failed" (it stopped early), its badge "partial".
	Badge string    `json:"badge"`
	Now   time.Time `json:"now"`
	// Elapsed is the session's time so far; once it ended (Ended), its
	// length, which stays put while the page lingers. An owner that has
	// not joined a session counts its node's time up.
	Elapsed Num                     `json:"elapsed_s"`
	Ended   bool                    `json:"ended,omitempty"`
	EndedAt *time.Time              `json:"ended_at,omitempty"`
	Config  *session.SessionSummary `json:"config,omitempty"`
	// Mode says where err_m comes from, which privacy model protects the
	// owners' releases, and whether (and for what) a secure sum runs.
	Mode *Mode `json:"mode,omitempty"`
	// Kept is how many rounds are kept (accepted: the model's rounds) of
	// Planned; DroppedAttempts counts the attempts dropped on the way
	// (owner: those it saw dropped).
	Kept            int `json:"kept"`
	Planned         int `json:"planned"`
	DroppedAttempts int `json:"dropped_attempts"`
	// Round and Attempt are the attempt in flight (user) or the newest seen (owner).
	Round   int `json:"round"`
	Attempt int `json:"attempt"`
	// Rounds are the round attempts, oldest first (at most MaxRounds;
	// RoundsOmitted older ones were dropped).
	Rounds        []Round `json:"rounds"`
	RoundsOmitted int     `json:"rounds_omitted,omitempty"`
	// Curves are the plotted series over the accepted rounds.
	Curves []Curve `json:"curves"`
	Owners *Owners `json:"owners,omitempty"` // data user only
	Budget Budget  `json:"budget"`
	Events []Event `json:"events,omitempty"` // owner only, newest last
	// EventsOmitted older events were dropped.
	EventsOmitted int `json:"events_omitted,omitempty"`
}

// Round is one round attempt.
type Round struct {
	Round    int    `json:"round"`
	Attempt  int    `json:"attempt"`
	Accepted bool   `json:"accepted"`
	Verdict  string `json:"verdict"` // "kept", "dropped", or "pending" (owner: no alpha yet)
	Why      string `json:"why,omitempty"`
	Alpha    Num    `json:"alpha"`
	// The data user's view (zero on an owner's page).
	Err      Num `json:"err,omitempty"`
	Z        Num `json:"z,omitempty"`
	Selected int `json:"selected,omitempty"`
	Answered int `json:"answered,omitempty"`
	Owners   int `json:"owners,omitempty"` // shares aggregated
	Refused  int `json:"refused,omitempty"`
	// Silent (distributed) are the selected owners that did not deal
	// into the share sum (session.RoundReport.Silent).
	Silent       []string `json:"silent,omitempty"`
	ValAccuracy  Num      `json:"val_accuracy,omitempty"`  // the ensemble so far on the user's validation data
	TestAccuracy Num      `json:"test_accuracy,omitempty"` // the ensemble so far on the user's test data (with --test)
	// What the attempt charged each owner it asked (at most: the data
	// user counts the shares it received and the err dealings it asked
	// for): ShareEps to each of the Owners whose share came, ErrEps to
	// each of ErrDealers roster owners asked to deal into the err sum.
	// Each owner's epsilon is its own budget: no figure sums over owners.
	ShareEps   Num `json:"share_eps,omitempty"`
	ErrDealers int `json:"err_dealers,omitempty"`
	ErrEps     Num `json:"err_eps,omitempty"`
	// ElapsedS is the attempt's own time (its selection to its verdict);
	// AtS is when it ended, from the session's start (join wait included).
	ElapsedS Num `json:"elapsed_s,omitempty"`
	AtS      Num `json:"at_s,omitempty"`
}

// Mode is how a session computes err_m and protects the owners' releases.
type Mode struct {
	// ErrFrom is "validation" (err_m on the data user's own validation
	// set: no owner release, no sum) or "securesum" (a secure sum of the
	// owners' weighted errors).
	ErrFrom string `json:"err_from"`
	// Privacy is "ldp" (each owner perturbs its own share) or
	// "distributed" (the selected owners' shares go through a secure sum
	// that carries the noise); Mechanism the announced mechanism ("none":
	// releases without noise).
	Privacy   string `json:"privacy"`
	Mechanism string `json:"mechanism"`
	// SecureSum is the announced sum method, set only when a sum runs;
	// Sums says what it sums ("err_m", "shares"). Both are empty when
	// err_m comes from the validation set under LDP: then no sum runs,
	// whatever method the configuration names.
	SecureSum string   `json:"secure_sum,omitempty"`
	Sums      []string `json:"sums,omitempty"`
}

// ModeOf is the mode of an announced session.
func ModeOf(c session.SessionSummary) *Mode {
	m := &Mode{ErrFrom: string(boost.AlphaValidation), Privacy: string(boost.PrivacyLDP), Mechanism: c.Mechanism}
	if c.Alpha == string(boost.AlphaSecureSum) {
		m.ErrFrom = c.Alpha
		m.Sums = append(m.Sums, "err_m")
	}
	if c.Privacy == string(boost.PrivacyDistributed) {
		m.Privacy = c.Privacy
		m.Sums = append(m.Sums, "shares")
	}
	if len(m.Sums) > 0 {
		m.SecureSum = c.SumMethod
	}
	return m
}

// Curve is one plotted series: (round, value) of accepted rounds.
type Curve struct {
	Name   string  `json:"name"`
	Colour string  `json:"colour"`
	Points []Point `json:"points"`
}

// Point is a curve's point.
type Point struct {
	Round int `json:"round"`
	Y     Num `json:"y"`
}

// Curve colours (the CI screenshot check looks for CurveColour).
const (
	CurveColour  = "#1f77b4" // the first series (validation accuracy; an owner's alpha)
	CurveColour2 = "#d62728" // the second (test accuracy)
)

// Owners is the data user's view of the owners.
type Owners struct {
	Expected  int                   `json:"expected,omitempty"`
	Joined    int                   `json:"joined"`
	Roster    int                   `json:"roster"`
	Used      int                   `json:"used"`
	NotJoined int                   `json:"not_joined"`
	Reasons   []session.ReasonCount `json:"not_joined_reasons,omitempty"`
	// The attempt in flight.
	Selected int                   `json:"selected,omitempty"`
	Shares   int                   `json:"shares,omitempty"`
	Refusals []session.ReasonCount `json:"refusals,omitempty"`
	Dropped  []string              `json:"dropped,omitempty"` // this round's dropped attempts
	// Peers lists owners one by one (bounded: those that would not join
	// first); PeersOmitted more are only counted.
	Peers        []session.PeerEntry `json:"peers,omitempty"`
	PeersOmitted int                 `json:"peers_omitted,omitempty"`
}

// Budget is the privacy spend: the owners' as the data user counts it, or an
// owner's own ledger.
//
// Each owner's epsilon is its own budget (its ledger, its --budget): a sum
// over different owners bounds no one's privacy, so the data user's view
// is per owner. An owner gives at most one share per session (ShareEps)
// and, in alpha mode securesum, one err dealing (ErrEps) in every attempt
// whose err sum asked the roster (ErrAttempts); PerOwnerMax is the most
// any one owner was charged, at most.
type Budget struct {
	// Data user.
	ShareEps    Num `json:"eps_per_share,omitempty"`
	ErrEps      Num `json:"eps_per_err_dealing,omitempty"`
	ErrAttempts int `json:"err_dealing_attempts,omitempty"`
	PerOwnerMax Num `json:"eps_per_owner_max,omitempty"`
	// SharesIn counts the owners charged for a share (each once),
	// SharesDropped those of them whose share went into a dropped
	// attempt; UnusedOwners the roster's owners not yet selected (each
	// can still give one share).
	SharesIn      int `json:"owners_charged_share,omitempty"`
	SharesDropped int `json:"owners_charged_dropped,omitempty"`
	UnusedOwners  int `json:"unused_owners,omitempty"`
	// Exact: mechanism none. The owners' releases carry no noise, so the
	// figures above count releases per owner (one each), not epsilon:
	// each owner charges its own ledger its own --eps for each one.
	Exact bool `json:"exact_releases,omitempty"`
	// Owner: its ledger.
	Spent  Num  `json:"spent,omitempty"`
	Total  Num  `json:"budget,omitempty"`
	Left   Num  `json:"left,omitempty"`
	IsUser bool `json:"-"`
}

// Event is an owner event on the page.
type Event struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"`
	Session string    `json:"session"`
	Round   int       `json:"round,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
	Eps     Num       `json:"eps,omitempty"`
	Detail  string    `json:"detail,omitempty"`
}

// Board collects what a node's status page shows. Its methods are safe
// for concurrent use.
type Board struct {
	role string
	peer string
	now  func() time.Time

	userSnap  func() session.UserSnapshot
	ownerSnap func() session.OwnerSnapshot
	val       *dataset.Dataset

	mu            sync.Mutex
	rounds        []Round
	roundsOmitted int
	events        []Event
	eventsOmitted int
	outcome       protocol.Outcome // End's (Kind 0 until called)
	// Counted over every reported attempt (omitted rows included):
	// dropped attempts, owners charged a share (and those of them in a
	// dropped attempt), attempts whose err sum asked the roster to deal.
	dropped       int
	sharesIn      int
	sharesDropped int
	errAttempts   int
	cached        *Status
	cachedAt      time.Time
	started       time.Time
	endedAt       time.Time // when the board first saw the session ended (a fallback: the session's own time first)
	joinedAt      time.Time // owner: its newest joined event
	leftAt        time.Time // owner: the left event after it
}

// NewUserBoard is the data user's board: snap reads the user's state
// (session.User.Snapshot); validation, if not nil, is the user's own
// labelled data on which the accuracy curve is computed.
func NewUserBoard(peer string, snap func() session.UserSnapshot, validation *dataset.Dataset) *Board {
	return &Board{role: "data user", peer: peer, now: time.Now, userSnap: snap, val: validation, started: time.Now()}
}

// NewOwnerBoard is an owner's board: snap reads its state
// (session.Owner.Snapshot).
func NewOwnerBoard(peer string, snap func() session.OwnerSnapshot) *Board {
	return &Board{role: "owner", peer: peer, now: time.Now, ownerSnap: snap, started: time.Now()}
}

// SetClock replaces the board's clock (tests on virtual time).
func (b *Board) SetClock(now func() time.Time) {
	b.mu.Lock()
	b.now, b.started = now, now()
	b.mu.Unlock()
}

// Round records a data user's round attempt (UserConfig.OnRound). It reads
// the user's snapshot for the ensemble, so it must run where Snapshot may
// (OnRound callbacks run through Loop.Notify: they may).
func (b *Board) Round(r session.RoundReport) {
	row := Round{Round: r.Round, Attempt: r.Attempt, Accepted: r.Accepted, Verdict: "dropped", Why: session.CutReason(r.Why),
		Alpha: Num(r.Alpha), Err: Num(r.Err), Z: Num(r.Z), Selected: r.Selected, Answered: r.Answered, Owners: r.Owners,
		Refused: r.Refused, Silent: r.Silent, ErrDealers: r.ErrDealers, ElapsedS: Num(r.Took.Seconds()), AtS: Num(r.Elapsed.Seconds())}
	if r.Accepted {
		row.Verdict = "kept"
		if r.TestAccuracy > 0 {
			row.TestAccuracy = Num(r.TestAccuracy)
		}
	}
	if n := r.Round; r.Accepted && b.val != nil && b.userSnap != nil {
		// Accepting round m makes an ensemble of m rounds (a resumed user
		// starts with the checkpoint's); later rounds may have been
		// accepted since the report was queued: cut them off.
		ens := b.userSnap().Ensemble
		if n >= 1 && len(ens.Rounds) >= n {
			ens.Rounds = ens.Rounds[:n]
			if ev, err := boost.Evaluate(b.val.X, b.val.Y, ens.Classes, ens.Predict); err == nil {
				row.ValAccuracy = Num(ev.Accuracy)
			}
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sharesIn += r.Owners
	if !r.Accepted {
		b.dropped++
		b.sharesDropped += r.Owners
	}
	if r.ErrDealers > 0 {
		b.errAttempts++
	}
	b.rounds = append(b.rounds, row)
	if len(b.rounds) > MaxRounds {
		b.roundsOmitted += len(b.rounds) - MaxRounds
		b.rounds = append([]Round(nil), b.rounds[len(b.rounds)-MaxRounds:]...)
	}
	b.cached = nil
}

// OwnerEvent records what an owner did (OwnerConfig.Observe).
func (b *Board) OwnerEvent(e session.OwnerEvent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e.Kind {
	case session.OwnerEventJoined:
		b.joinedAt, b.leftAt, b.endedAt = e.Time, time.Time{}, time.Time{}
	case session.OwnerEventLeft:
		if !b.joinedAt.IsZero() {
			b.leftAt = e.Time
		}
	}
	b.events = append(b.events, Event{Time: e.Time, Kind: e.Kind, Session: e.Session, Round: e.Round, Attempt: e.Attempt,
		Eps: Num(e.Eps), Detail: session.CutReason(e.Detail)})
	if len(b.events) > MaxEvents {
		b.eventsOmitted += len(b.events) - MaxEvents
		b.events = append([]Event(nil), b.events[len(b.events)-MaxEvents:]...)
	}
	b.cached = nil
}

// End sets the outcome the node decided on (the one its exit status comes
// from): its kind is the badge and its text the outcome line, instead of
// the board's own reading of the session.
func (b *Board) End(out protocol.Outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out.Reason = session.CutReason(out.Reason)
	b.outcome = out
	if b.endedAt.IsZero() {
		b.endedAt = b.now()
	}
	b.cached = nil
}

// Status returns what the page shows now. The node's loop is read at most
// every 500 ms however often it is called.
func (b *Board) Status() Status {
	b.mu.Lock()
	if b.cached != nil && b.now().Sub(b.cachedAt) < minInterval {
		s := *b.cached
		b.mu.Unlock()
		return s
	}
	b.mu.Unlock()
	// Read the node without holding b.mu: a snapshot waits for the loop,
	// and the loop's callbacks (Round, OwnerEvent) take b.mu.
	var us *session.UserSnapshot
	var os *session.OwnerSnapshot
	if b.userSnap != nil {
		s := b.userSnap()
		us = &s
	}
	if b.ownerSnap != nil {
		s := b.ownerSnap()
		os = &s
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Status{Role: b.role, Peer: b.peer, Now: b.now().UTC(), Rounds: append([]Round{}, b.rounds...),
		RoundsOmitted: b.roundsOmitted, Curves: []Curve{}}
	if us != nil {
		b.userStatus(&s, us)
	}
	if os != nil {
		b.ownerStatus(&s, os)
	}
	if b.outcome.Kind != 0 {
		s.Outcome, s.OutcomeKind = b.outcome.String(), b.outcome.Kind.String()
		if s.Planned == 0 {
			s.Planned = b.outcome.Planned
		}
		if !s.Ended {
			b.ended(&s, time.Time{}, time.Time{})
		}
	}
	s.Badge = s.State
	if s.OutcomeKind != "" {
		s.Badge = s.OutcomeKind
	}
	b.cached, b.cachedAt = &s, b.now()
	return s
}

func (b *Board) userStatus(s *Status, u *session.UserSnapshot) {
	cfg := u.Config
	s.Session, s.State, s.Error, s.Config = u.Session, u.State.String(), u.Err, &cfg
	s.Round, s.Attempt = u.Round, u.Attempt
	if cfg.Rounds > 0 {
		s.Mode = ModeOf(cfg)
	}
	rounds := len(u.Ensemble.Rounds)
	s.Kept, s.Planned, s.DroppedAttempts = rounds, cfg.Rounds, b.dropped
	if u.State == session.UserDone || u.State == session.UserFailed {
		b.ended(s, u.Started, u.Ended) // the session's length stays put while the page lingers
	} else if !u.Started.IsZero() {
		s.Elapsed = Num(b.now().Sub(u.Started).Seconds())
	}
	s.Owners = &Owners{Expected: u.Expected, Joined: u.Joined, Roster: u.Roster, Used: u.Used, NotJoined: u.NotJoinedTotal,
		Reasons: u.NotJoined, Selected: u.Selected, Shares: u.Shares, Refusals: u.Refusals, Dropped: u.Dropped,
		Peers: u.Peers, PeersOmitted: max(0, u.Joined+u.NotJoinedTotal-len(u.Peers))}
	// What one share and one err dealing cost their owner (a release
	// without noise counts 1, as the CLI owners charge by default).
	share, dealing := cfg.Epsilon, cfg.ErrEpsilon
	if cfg.Mechanism == "none" {
		share, dealing = 1, 1
	}
	if cfg.Alpha != string(boost.AlphaSecureSum) {
		dealing = 0
	}
	val := Curve{Name: "validation accuracy", Colour: CurveColour, Points: []Point{}}
	test := Curve{Name: "test accuracy", Colour: CurveColour2, Points: []Point{}}
	for i := range s.Rounds {
		r := &s.Rounds[i]
		if r.Owners > 0 {
			r.ShareEps = Num(share)
		}
		if r.ErrDealers > 0 {
			r.ErrEps = Num(dealing)
		}
		if !r.Accepted {
			continue
		}
		if r.ValAccuracy != 0 {
			val.Points = append(val.Points, Point{r.Round, r.ValAccuracy})
		}
		if r.TestAccuracy != 0 {
			test.Points = append(test.Points, Point{r.Round, r.TestAccuracy})
		}
	}
	s.Curves = append(s.Curves, val)
	if len(test.Points) > 0 {
		s.Curves = append(s.Curves, test)
	}
	bu := Budget{ShareEps: Num(share), ErrEps: Num(dealing), ErrAttempts: b.errAttempts, SharesIn: b.sharesIn,
		SharesDropped: b.sharesDropped, IsUser: true, Exact: cfg.Mechanism == "none"}
	perOwner := float64(b.errAttempts) * dealing
	if b.sharesIn > 0 {
		perOwner += share
	}
	bu.PerOwnerMax = Num(perOwner)
	if u.Roster > 0 {
		bu.UnusedOwners = u.Roster - u.Used
	}
	s.Budget = bu
	// The outcome in the words every node logs (kind: M' of M rounds (why)).
	switch {
	case u.State == session.UserDone && rounds >= cfg.Rounds:
		s.Outcome, s.OutcomeKind = fmt.Sprintf("complete: %d of %d rounds", rounds, cfg.Rounds), "complete"
	case u.State == session.UserDone:
		s.Outcome, s.OutcomeKind = fmt.Sprintf("partial: %d of %d rounds", rounds, cfg.Rounds), "partial"
	case u.State == session.UserFailed && rounds > 0:
		s.Outcome, s.OutcomeKind = fmt.Sprintf("partial: %d of %d rounds (%s)", rounds, cfg.Rounds, u.Err), "partial"
	case u.State == session.UserFailed:
		s.Outcome, s.OutcomeKind = fmt.Sprintf("failed: 0 of %d rounds (%s)", cfg.Rounds, u.Err), "failed"
	}
	if oc := u.Outcome; oc.Kind != 0 {
		// The session's own statement, the one the CLI exits with: an
		// interrupted user fails whatever it kept (protocol.Failed).
		s.Outcome, s.OutcomeKind = oc.String(), oc.Kind.String()
		if oc.Kind != protocol.OutcomeFailed {
			s.Kept = oc.Rounds
		}
	}
}

// ended marks s as a session that has ended, and its length from start to
// end: the session's own times, or (zero) the board's start and the first
// time the board saw it ended.
func (b *Board) ended(s *Status, start, end time.Time) {
	if b.endedAt.IsZero() {
		b.endedAt = b.now()
	}
	if end.IsZero() {
		end = b.endedAt
	}
	if start.IsZero() {
		start = b.started
	}
	at := end.UTC()
	s.Ended, s.EndedAt, s.Elapsed = true, &at, Num(max(0, end.Sub(start).Seconds()))
}

func (b *Board) ownerStatus(s *Status, o *session.OwnerSnapshot) {
	s.Session, s.State = o.Session, o.State.String()
	s.Round, s.Attempt = o.Round, o.Attempt
	if o.Config.Learner != "" {
		cfg := o.Config
		s.Config = &cfg
		s.Mode = ModeOf(cfg)
	}
	s.Planned = o.Config.Rounds
	// An owner's rounds are what it saw of the session: the learners and
	// the user's verdicts (public), not the user's aggregates.
	s.Rounds = s.Rounds[:0]
	alpha := Curve{Name: "alpha of kept learners", Colour: CurveColour, Points: []Point{}}
	for _, r := range o.Rounds {
		row := Round{Round: r.Round, Attempt: r.Attempt, Accepted: r.Accepted, Alpha: Num(math.NaN()), Verdict: "pending"}
		switch {
		case r.Accepted:
			row.Verdict, row.Alpha = "kept", Num(r.Alpha)
			alpha.Points = append(alpha.Points, Point{r.Round, Num(r.Alpha)})
			s.Kept++
		case r.Decided:
			row.Verdict, row.Why = "dropped", "the data user dropped the learner"
			s.DroppedAttempts++
		}
		s.Rounds = append(s.Rounds, row)
	}
	if o.FinalRounds > 0 {
		s.Kept = o.FinalRounds
	}
	s.Curves = append(s.Curves, alpha)
	s.Budget = Budget{Spent: Num(o.Spent), Total: Num(o.Budget), Left: Num(math.Max(0, o.Budget-o.Spent))}
	s.Events = append([]Event{}, b.events...)
	s.EventsOmitted = b.eventsOmitted
	switch {
	case o.State == session.OwnerDone && o.FinalRounds >= o.Config.Rounds:
		s.Outcome, s.OutcomeKind = fmt.Sprintf("complete: %d of %d rounds", o.FinalRounds, o.Config.Rounds), "complete"
	case o.State == session.OwnerDone:
		s.Outcome, s.OutcomeKind = fmt.Sprintf("partial: %d of %d rounds", o.FinalRounds, o.Config.Rounds), "partial"
	case o.State == session.OwnerIdle && len(b.events) > 0:
		if e := b.events[len(b.events)-1]; e.Kind == session.OwnerEventLeft {
			s.Outcome, s.OutcomeKind = fmt.Sprintf("failed: 0 of %d rounds (%s)", o.Config.Rounds, e.Detail), "failed"
		}
	}
	if o.Outcome.Kind != 0 && o.State != session.OwnerJoined {
		s.Outcome, s.OutcomeKind = o.Outcome.String(), o.Outcome.Kind.String() // the data user's words, as this owner logged them
		if o.Outcome.Kind != protocol.OutcomeFailed {
			s.Kept = o.Outcome.Rounds
		}
		if s.Planned == 0 {
			s.Planned = o.Outcome.Planned
		}
	}
	// The time: the session's, from joining to leaving; an owner that has
	// not joined one counts its node's time.
	switch {
	case s.OutcomeKind != "":
		b.ended(s, b.joinedAt, b.leftAt)
	case !b.joinedAt.IsZero():
		s.Elapsed = Num(b.now().Sub(b.joinedAt).Seconds())
	default:
		s.Elapsed = Num(b.now().Sub(b.started).Seconds())
	}
}

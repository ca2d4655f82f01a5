package status

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/dataset"
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
	Role    string                  `json:"role"` // "data user" or "owner"
	Peer    string                  `json:"peer"`
	Session string                  `json:"session"`
	State   string                  `json:"state"`
	Error   string                  `json:"error,omitempty"`
	Outcome string                  `json:"outcome,omitempty"`
	Now     time.Time               `json:"now"`
	Elapsed Num                     `json:"elapsed_s"`
	Config  *session.SessionSummary `json:"config,omitempty"`
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
	Err          Num `json:"err,omitempty"`
	Z            Num `json:"z,omitempty"`
	Selected     int `json:"selected,omitempty"`
	Answered     int `json:"answered,omitempty"`
	Owners       int `json:"owners,omitempty"` // shares aggregated
	Refused      int `json:"refused,omitempty"`
	ValAccuracy  Num `json:"val_accuracy,omitempty"`  // the ensemble so far on the user's validation data
	TestAccuracy Num `json:"test_accuracy,omitempty"` // the ensemble so far on the user's test data (with --test)
	OwnersEps    Num `json:"owners_eps,omitempty"`    // epsilon charged to owners by the attempt, summed (at most)
	ElapsedS     Num `json:"elapsed_s,omitempty"`
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
type Budget struct {
	// Data user: epsilon charged to owners, summed over owners (at most: it
	// counts the shares it received and the err dealings it asked for),
	// how much of it on dropped attempts, each share's epsilon, and the
	// roster's owners not yet selected (each can still give one share).
	OwnersSpent   Num `json:"owners_eps_spent,omitempty"`
	OwnersDropped Num `json:"owners_eps_dropped,omitempty"`
	ShareEps      Num `json:"eps_per_share,omitempty"`
	UnusedOwners  int `json:"unused_owners,omitempty"`
	// Exact: mechanism none. The owners' releases carry no noise, so the
	// spend above counts releases (one each), not epsilon: each owner
	// charges its own ledger its own --eps for each one.
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
	outcome       string
	cached        *Status
	cachedAt      time.Time
	started       time.Time
	endedAt       time.Time // when the board first saw the user done or failed
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
		Refused: r.Refused, OwnersEps: Num(r.Charged), ElapsedS: Num(r.Elapsed.Seconds())}
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
	b.events = append(b.events, Event{Time: e.Time, Kind: e.Kind, Session: e.Session, Round: e.Round, Attempt: e.Attempt,
		Eps: Num(e.Eps), Detail: session.CutReason(e.Detail)})
	if len(b.events) > MaxEvents {
		b.eventsOmitted += len(b.events) - MaxEvents
		b.events = append([]Event(nil), b.events[len(b.events)-MaxEvents:]...)
	}
	b.cached = nil
}

// End sets the outcome line the node decided on (shown instead of the
// board's own summary).
func (b *Board) End(outcome string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.outcome = session.CutReason(outcome)
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
	if b.outcome != "" {
		s.Outcome = b.outcome
	}
	b.cached, b.cachedAt = &s, b.now()
	return s
}

func (b *Board) userStatus(s *Status, u *session.UserSnapshot) {
	cfg := u.Config
	s.Session, s.State, s.Error, s.Config = u.Session, u.State.String(), u.Err, &cfg
	s.Round, s.Attempt = u.Round, u.Attempt
	end := b.now()
	if u.State == session.UserDone || u.State == session.UserFailed {
		if b.endedAt.IsZero() {
			b.endedAt = end // the session's length stays put while the page lingers
		}
		end = b.endedAt
	}
	if !u.Started.IsZero() {
		s.Elapsed = Num(end.Sub(u.Started).Seconds())
	}
	s.Owners = &Owners{Expected: u.Expected, Joined: u.Joined, Roster: u.Roster, Used: u.Used, NotJoined: u.NotJoinedTotal,
		Reasons: u.NotJoined, Selected: u.Selected, Shares: u.Shares, Refusals: u.Refusals, Dropped: u.Dropped,
		Peers: u.Peers, PeersOmitted: max(0, u.Joined+u.NotJoinedTotal-len(u.Peers))}
	var spent, dropped float64
	val := Curve{Name: "validation accuracy", Colour: CurveColour, Points: []Point{}}
	test := Curve{Name: "test accuracy", Colour: CurveColour2, Points: []Point{}}
	for _, r := range s.Rounds {
		spent += float64(r.OwnersEps)
		if !r.Accepted {
			dropped += float64(r.OwnersEps)
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
	s.Budget = Budget{OwnersSpent: Num(spent), OwnersDropped: Num(dropped), ShareEps: Num(cfg.Epsilon), IsUser: true,
		Exact: cfg.Mechanism == "none"}
	if u.Roster > 0 {
		s.Budget.UnusedOwners = u.Roster - u.Used
	}
	// The outcome in the words every node logs (kind: M' of M rounds (why)).
	rounds := len(u.Ensemble.Rounds)
	switch {
	case u.State == session.UserDone && rounds >= cfg.Rounds:
		s.Outcome = fmt.Sprintf("complete: %d of %d rounds", rounds, cfg.Rounds)
	case u.State == session.UserDone:
		s.Outcome = fmt.Sprintf("partial: %d of %d rounds", rounds, cfg.Rounds)
	case u.State == session.UserFailed && rounds > 0:
		s.Outcome = fmt.Sprintf("partial: %d of %d rounds (%s)", rounds, cfg.Rounds, u.Err)
	case u.State == session.UserFailed:
		s.Outcome = fmt.Sprintf("failed: 0 of %d rounds (%s)", cfg.Rounds, u.Err)
	}
	if u.Outcome.Kind != 0 {
		s.Outcome = u.Outcome.String() // the session's own statement
	}
}

func (b *Board) ownerStatus(s *Status, o *session.OwnerSnapshot) {
	s.Session, s.State = o.Session, o.State.String()
	s.Round, s.Attempt = o.Round, o.Attempt
	s.Elapsed = Num(b.now().Sub(b.started).Seconds())
	if o.Config.Learner != "" {
		cfg := o.Config
		s.Config = &cfg
	}
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
		case r.Decided:
			row.Verdict, row.Why = "dropped", "the data user dropped the learner"
		}
		s.Rounds = append(s.Rounds, row)
	}
	s.Curves = append(s.Curves, alpha)
	s.Budget = Budget{Spent: Num(o.Spent), Total: Num(o.Budget), Left: Num(math.Max(0, o.Budget-o.Spent))}
	s.Events = append([]Event{}, b.events...)
	s.EventsOmitted = b.eventsOmitted
	switch {
	case o.State == session.OwnerDone && o.FinalRounds >= o.Config.Rounds:
		s.Outcome = fmt.Sprintf("complete: %d of %d rounds", o.FinalRounds, o.Config.Rounds)
	case o.State == session.OwnerDone:
		s.Outcome = fmt.Sprintf("partial: %d of %d rounds", o.FinalRounds, o.Config.Rounds)
	case o.State == session.OwnerIdle && len(b.events) > 0:
		if e := b.events[len(b.events)-1]; e.Kind == session.OwnerEventLeft {
			s.Outcome = fmt.Sprintf("failed: 0 of %d rounds (%s)", o.Config.Rounds, e.Detail)
		}
	}
	if o.Outcome.Kind != 0 && o.State != session.OwnerJoined {
		s.Outcome = o.Outcome.String() // the data user's words, as this owner logged them
	}
}

package session

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
)

// Observing a session from outside its loop (a status page, a progress
// line). The state belongs to the driver: a snapshot is copied under
// Loop.Read, and events are handed out through Loop.Notify, in order and
// outside the state lock. Whatever outsiders can make a node hold (owner
// ids, refusal reasons, an owner's count of joiners) is bounded here, before
// it leaves the driver: a snapshot costs O(joined owners) on the driver and
// returns at most SnapshotMaxReasons reasons of SnapshotMaxReasonBytes each.

// Bounds of a snapshot.
const (
	SnapshotMaxReasons     = 16  // distinct reasons kept (the most frequent; the rest counted as "other")
	SnapshotMaxReasonBytes = 300 // a reason is cut to this many bytes (on a rune boundary)
	SnapshotMaxRounds      = 1000
	SnapshotMaxPeers       = 64 // owners listed one by one (those that would not join first, then by id)
)

// ReasonCount is a reason and how many owners (or attempts) gave it.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// CutReason bounds a reason an outsider supplied: valid UTF-8, no control
// characters, at most SnapshotMaxReasonBytes bytes.
func CutReason(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) <= SnapshotMaxReasonBytes {
		return s
	}
	cut := SnapshotMaxReasonBytes - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// groupReasons counts reasons (already grouped or not), most frequent
// first, ties by text, cut to SnapshotMaxReasons entries (the rest summed
// as "other").
func groupReasons(counts map[string]int) []ReasonCount {
	merged := map[string]int{}
	for r, n := range counts {
		merged[CutReason(r)] += n
	}
	out := make([]ReasonCount, 0, len(merged))
	for r, n := range merged {
		out = append(out, ReasonCount{r, n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Reason < out[j].Reason
	})
	if len(out) > SnapshotMaxReasons {
		other := 0
		for _, rc := range out[SnapshotMaxReasons-1:] {
			other += rc.Count
		}
		out = append(out[:SnapshotMaxReasons-1], ReasonCount{"other reasons", other})
	}
	return out
}

// SessionSummary is the announced configuration, as both roles know it.
type SessionSummary struct {
	Learner        string  `json:"learner"`
	Mechanism      string  `json:"mechanism"`
	Epsilon        float64 `json:"eps"`
	Rounds         int     `json:"rounds"`
	OwnersPerRound int     `json:"owners_per_round"`
	Alpha          string  `json:"alpha"`
	SumMethod      string  `json:"securesum"`
	Privacy        string  `json:"privacy"`
	ErrEpsilon     float64 `json:"err_eps,omitempty"`
}

// UserSnapshot is what the data user knows at one moment.
type UserSnapshot struct {
	Session     string
	State       UserState
	Err         string // why it failed (UserFailed)
	Config      SessionSummary
	MaxAttempts int
	Expected    int // ExpectedOwners
	// Round and Attempt are the attempt in flight (round 0 while joining).
	Round, Attempt int
	Started        time.Time
	Ended          time.Time // when the outcome was stated (zero while it runs)
	Joined         int       // owners that joined (the roster's candidates)
	Roster         int       // roster size, 0 before the rounds start
	Used           int       // owners selected so far
	// NotJoined are the reasons owners gave for staying out (grouped,
	// bounded; NotJoinedTotal counts them all).
	NotJoined      []ReasonCount
	NotJoinedTotal int
	// The attempt in flight: owners selected, shares received, refusals.
	Selected, Shares int
	Refusals         []ReasonCount
	// Dropped is what went wrong in the current round's dropped attempts.
	Dropped []string
	// Peers lists owners one by one: at most SnapshotMaxPeers, those that
	// would not join first, each group by id.
	Peers []PeerEntry
	// Ensemble holds the accepted rounds (a copy).
	Ensemble boost.Ensemble
	// Outcome is how the session ended (zero while it runs): the words the
	// user and every owner log.
	Outcome protocol.Outcome
}

// Snapshot copies the user's state on its driver (Runner.Call): from any
// goroutine and from the user's callbacks (OnRound, OnDone), between two
// events.
func (u *User) Snapshot() (s UserSnapshot) {
	_ = u.run.Call(context.Background(), func() {
		c := u.cfg.Boost
		s = UserSnapshot{Session: u.cfg.Session, State: u.state, MaxAttempts: c.MaxAttempts, Expected: u.cfg.ExpectedOwners, Outcome: u.outcome,
			Config: summary(u.wcfg.GetLearner(), u.wcfg.GetMechanism(), u.wcfg.GetEpsilon(), int(u.wcfg.GetRounds()),
				int(u.wcfg.GetOwnersPerRound()), u.wcfg.GetAlphaMode(), u.wcfg.GetSumMethod(), u.wcfg.GetPrivacy(), u.wcfg.GetErrEpsilon()),
			Round: int(u.key.round), Attempt: int(u.key.attempt), Started: u.started, Ended: u.ended,
			Joined: len(u.joined), Used: len(u.used), NotJoinedTotal: len(u.notJoined)}
		if u.err != nil {
			s.Err = CutReason(u.err.Error())
		}
		if u.roster != nil {
			s.Roster = len(u.roster.IDs)
		}
		why := map[string]int{}
		for _, r := range u.notJoined {
			why[r]++
		}
		s.NotJoined = groupReasons(why)
		if u.state == UserShares || u.state == UserErrSum {
			s.Selected, s.Shares = u.report.Selected, len(u.shares)
			s.Refusals = groupReasons(u.refusals)
		}
		s.Peers = u.peerEntries()
		for _, a := range u.attempts {
			s.Dropped = append(s.Dropped, CutReason(a))
		}
		s.Ensemble = boost.Ensemble{Classes: u.us.Model.Classes, Rounds: slices.Clone(u.us.Model.Rounds)}
	})
	return s
}

// PeerEntry is one owner as the data user knows it.
type PeerEntry struct {
	ID       string `json:"id"`
	Joined   bool   `json:"joined"`
	Selected bool   `json:"selected,omitempty"` // selected in some attempt so far
	Reason   string `json:"reason,omitempty"`   // why it would not join
}

// peerEntries picks SnapshotMaxPeers owners without sorting every id: a
// bounded sorted window per group, O(n log SnapshotMaxPeers).
func (u *User) peerEntries() []PeerEntry {
	var refused, joined []string
	for id := range u.notJoined {
		refused = keepSmallest(refused, string(id), SnapshotMaxPeers)
	}
	for id := range u.joined {
		joined = keepSmallest(joined, string(id), SnapshotMaxPeers-len(refused))
	}
	out := make([]PeerEntry, 0, len(refused)+len(joined))
	for _, id := range refused {
		out = append(out, PeerEntry{ID: CutReason(id), Reason: CutReason(u.notJoined[protocol.PeerID(id)])})
	}
	for _, id := range joined {
		p := protocol.PeerID(id)
		out = append(out, PeerEntry{ID: CutReason(id), Joined: true, Selected: u.used[p]})
	}
	return out
}

// keepSmallest inserts s into the sorted window w of at most n strings.
func keepSmallest(w []string, s string, n int) []string {
	if n <= 0 {
		return w
	}
	i, _ := slices.BinarySearch(w, s)
	if i >= n {
		return w
	}
	if len(w) < n {
		w = append(w, "")
	}
	copy(w[i+1:], w[i:])
	w[i] = s
	return w
}

func summary(learner, mech string, eps float64, rounds, h int, alpha, sum, privacy string, errEps float64) SessionSummary {
	if privacy == "" {
		privacy = string(boost.PrivacyLDP)
	}
	return SessionSummary{Learner: learner, Mechanism: mech, Epsilon: eps, Rounds: rounds, OwnersPerRound: h,
		Alpha: alpha, SumMethod: sum, Privacy: privacy, ErrEpsilon: errEps}
}

// OwnerRound is a round attempt as an owner saw it: the learner arrived,
// and the user's verdict (alpha), once it did.
type OwnerRound struct {
	Round    int     `json:"round"`
	Attempt  int     `json:"attempt"`
	Alpha    float64 `json:"alpha"`
	Decided  bool    `json:"decided"`  // the Alpha message arrived
	Accepted bool    `json:"accepted"` // applied to this owner's weights
}

// OwnerSnapshot is what an owner knows at one moment. It holds nothing
// computed from the owner's data: no weights, no errors on its samples, no
// sample count.
type OwnerSnapshot struct {
	Session        string
	State          OwnerState
	Config         SessionSummary // zero while idle
	Round, Attempt int            // newest round seen
	InRoster       bool
	RosterSize     int
	Rounds         []OwnerRound // this session's attempts with a learner, in order
	FinalRounds    int          // rounds of the final model (0 before)
	Spent, Budget  float64      // from the ledger
	// Outcome is how the last session this owner left ended, in the words
	// it logged (zero before).
	Outcome protocol.Outcome
}

// Snapshot copies the owner's state on its driver (Call; as User.Snapshot).
func (o *Owner) Snapshot() (s OwnerSnapshot) {
	o.call(func() {
		s = OwnerSnapshot{Session: o.session, State: o.state(), Round: int(o.current.round), Attempt: int(o.current.attempt),
			InRoster: o.inRoster, Spent: o.cfg.Ledger.Spent(), Budget: o.cfg.Ledger.Budget(), Outcome: o.lc.Outcome()}
		if w := o.wcfg; w != nil {
			s.Config = summary(w.GetLearner(), w.GetMechanism(), w.GetEpsilon(), int(w.GetRounds()), int(w.GetOwnersPerRound()),
				w.GetAlphaMode(), w.GetSumMethod(), w.GetPrivacy(), w.GetErrEpsilon())
		}
		if o.roster != nil {
			s.RosterSize = len(o.roster.IDs)
		}
		for k, r := range o.rounds {
			if r.base == nil {
				continue
			}
			or := OwnerRound{Round: int(k.round), Attempt: int(k.attempt), Accepted: r.updated, Decided: r.updated || r.alpha != 0}
			if r.updated {
				or.Alpha = r.alpha
			}
			s.Rounds = append(s.Rounds, or)
		}
		sort.Slice(s.Rounds, func(i, j int) bool {
			a, b := s.Rounds[i], s.Rounds[j]
			return a.Round < b.Round || (a.Round == b.Round && a.Attempt < b.Attempt)
		})
		if len(s.Rounds) > SnapshotMaxRounds {
			s.Rounds = s.Rounds[len(s.Rounds)-SnapshotMaxRounds:]
		}
		if o.final != nil {
			s.FinalRounds = len(o.final.Rounds)
		}
	})
	return s
}

// OwnerEvent is something an owner did, for an observer (OwnerConfig.Observe).
type OwnerEvent struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"` // one of the OwnerEvent* constants
	Session string    `json:"session"`
	Round   int       `json:"round,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
	Eps     float64   `json:"eps,omitempty"` // charged (OwnerEventCharged, OwnerEventErrCharged)
	Detail  string    `json:"detail,omitempty"`
}

// Owner event kinds.
const (
	OwnerEventJoined     = "joined"       // joined an announced session
	OwnerEventNotJoined  = "not joined"   // refused an announced session; Detail says why (once per session)
	OwnerEventSelected   = "selected"     // selected for a round attempt
	OwnerEventCharged    = "share"        // the ledger charged a share (it leaves next)
	OwnerEventErrCharged = "err dealing"  // the ledger charged an err dealing
	OwnerEventRefused    = "refused"      // refused to contribute to an attempt; Detail says why
	OwnerEventLeft       = "left session" // left the session; Detail says why
)

// observe hands an event to OwnerConfig.Observe as a Notify effect (at the
// input's time).
func (o *Owner) observe(e OwnerEvent) {
	if o.cfg.Observe == nil {
		return
	}
	e.Time = o.lc.Now()
	if e.Session == "" {
		e.Session = o.session
	}
	e.Detail = CutReason(e.Detail)
	if math.IsNaN(e.Eps) || math.IsInf(e.Eps, 0) {
		e.Eps = 0
	}
	o.lc.Out.Notify(engine.Notify{Event: engine.EventReport, Value: e})
}

// roundWhy is what the data user says about an attempt it reports: why it
// was dropped (the last of the round's dropped-attempt notes), or "".
func (u *User) roundWhy() string {
	if u.report.Accepted || len(u.attempts) == 0 {
		return ""
	}
	why := u.attempts[len(u.attempts)-1]
	if _, rest, ok := strings.Cut(why, ": "); ok && strings.HasPrefix(why, "attempt ") {
		why = rest
	}
	return why
}

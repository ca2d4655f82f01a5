package session

import (
	"bytes"
	crand "crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
	"google.golang.org/protobuf/proto"
)

// Liveness and late joins (issue 31 item 4): outsiders that Join an open
// session and then never answer must not be able to hold it.
//
//   - The data user answers every Join from a peer that has not proved it
//     is alive with a LiveCheck (a nonce of its own, fresh per joiner); the
//     peer proves it receives the user's messages by echoing the nonce
//     (LiveEcho). The echo is not derived from the owner's data.
//   - Selection prefers owners that answered: a roster member whose check
//     has gone unanswered for longer than the grace (liveGrace) is selected
//     only when too few others are left (pick).
//   - An open session keeps announcing until its first round is accepted:
//     an owner that joins after the rounds started and echoes its check
//     enters the next roster version (growRoster), published at the next
//     attempt with Version+1.
//   - A selected owner that stays silent stays in used, as every selected
//     owner does: it is never selected again in the session.

// ErrLiveness refuses a LiveEcho that answers no check of this user's, or
// another nonce (counted as "liveness message refused").
var ErrLiveness = errors.New("liveness message refused")

// timerAnnounce is the user's named timer that re-announces a running open
// session while late owners may still join (announceRunning).
const timerAnnounce = "announce"

// liveGrace is how long a joiner's first LiveCheck may go unanswered before
// selection ranks the joiner last: an owner that heard the Announce answers
// the check within a round trip, well inside one announce interval.
func (u *User) liveGrace() time.Duration { return u.cfg.Timing.AnnounceInterval }

// challenge sends a LiveCheck to a joiner whose Join the user holds: the
// same nonce on every repeated Join (a repeated Join does not restart its
// grace), for the roster version the join is held for.
func (u *User) challenge(to protocol.PeerID, j *joinInfo) {
	if j.check == nil {
		j.check = make([]byte, NonceBytes)
		if _, err := crand.Read(j.check); err != nil {
			u.log.Error("liveness nonce", "err", err)
			j.check = nil
			return
		}
		j.checkedAt = u.life.Now()
	}
	j.checks++
	version := uint32(1)
	if u.roster != nil {
		version = u.roster.Version + 1
	}
	u.send(to, roundKey{}, &wire.LiveCheck{Nonce: j.check, RosterVersion: version})
}

// onLiveEcho records that a joiner answered its LiveCheck.
func (u *User) onLiveEcho(from protocol.PeerID, e *wire.LiveEcho) error {
	j, ok := u.joined[from]
	if !ok || j.check == nil {
		return fmt.Errorf("%w: echo from a peer that was not challenged", ErrLiveness)
	}
	if n := len(e.GetNonce()); n != NonceBytes || !bytes.Equal(e.GetNonce(), j.check) {
		return fmt.Errorf("%w: echo of %d bytes does not match the check", ErrLiveness, n)
	}
	if j.live {
		return fmt.Errorf("%w: second echo", protocol.ErrDuplicateShare)
	}
	j.live = true
	if j.checks == 1 {
		// One check, one echo: a round trip (Karn's rule: none from a
		// check sent again).
		u.rtt.Observe(from, u.life.Now().Sub(j.checkedAt))
	}
	u.joined[from] = j
	return nil
}

// unproven reports whether selection ranks p last: it was challenged, has
// not echoed, and its grace has passed. Owners never challenged (a resumed
// user's roster comes from its checkpoint) are not.
func (u *User) unproven(p protocol.PeerID) bool {
	j, ok := u.joined[p]
	return ok && j.check != nil && !j.live && u.life.Now().Sub(j.checkedAt) > u.liveGrace()
}

// pick selects h of the unused owners avail (sorted): with the public
// stream (seed, round, attempt) over those that answered their check (or
// are within its grace) when they are at least h; otherwise all of them
// and the rest on the same stream over the unproven ones. When every owner
// answered (no outsiders), this is boost.SelectOwners over avail, as in
// the reference trainer. It returns the owners in roster order.
func (u *User) pick(avail []protocol.PeerID, h int) []protocol.PeerID {
	var first, last []protocol.PeerID
	for _, p := range avail {
		if u.unproven(p) {
			last = append(last, p)
		} else {
			first = append(first, p)
		}
	}
	r, a := int(u.key.round), int(u.key.attempt)
	var out []protocol.PeerID
	if len(first) >= h {
		for _, i := range boost.SelectOwners(u.cfg.Boost.Seed, r, a, len(first), h) {
			out = append(out, first[i])
		}
		return out
	}
	out = append(out, first...)
	for _, i := range boost.SelectOwners(u.cfg.Boost.Seed, r, a, len(last), h-len(first)) {
		out = append(out, last[i])
	}
	slices.Sort(out)
	return out
}

// growable reports whether the session takes joins after its start: an
// open session (no admission rule; a closed one knows its owners) that is
// not a resumed one.
func (u *User) growable() bool { return u.cfg.Admit == nil && u.cfg.Resume == nil }

// growing reports whether a Join is taken now, for a later roster version:
// a growable session whose rounds started and whose first round is not yet
// accepted. An owner that joins after an accepted round could not take
// part (it lacks the accepted learners' weight updates and would sit the
// session out), so the session stops announcing then.
func (u *User) growing() bool {
	return u.growable() && u.roster != nil && len(u.us.Model.Rounds) == 0 &&
		(u.state == UserRoster || u.state == UserShares || u.state == UserErrSum)
}

// announceRunning re-announces a running session while it takes late
// joins: the first time an announce interval after the roster, each next
// time twice as long after the last, up to runningAnnounceSlowdown
// intervals (runningAnnounceAfter). The announcement is flooded to every
// connected owner, almost all of them in the roster already: at 1,000
// owners, 1.1 KB each every 300 ms was 29 Mbit/s of the user's uplink
// beside the roster and the first attempts (issue 31). A late joiner hears
// the session within runningAnnounceSlowdown intervals.
func (u *User) announceRunning() {
	if !u.growing() {
		return
	}
	if wait := u.announceQuietIn(); wait > 0 {
		u.life.Out.SetTimer(timerAnnounce, wait)
		return
	}
	u.publish(roundKey{}, &wire.Announce{Config: u.wcfg})
	if u.log.IsDebug() {
		u.log.Debug("re-announced the running session", "bytes", proto.Size(u.wcfg), "schema_bytes", proto.Size(u.wcfg.GetSchema()), "joined", len(u.joined))
	}
	u.announcedAt = u.life.Now()
	u.runningAnnounces++
	u.life.Out.SetTimer(timerAnnounce, u.runningAnnounceAfter())
}

// announceQuietIn is how long a running re-announcement that fell due
// now waits: until an attempt in flight has been out one round trip (the
// largest smoothed RTT measured from the roster's joins; none measured, no
// wait). An attempt's start is the user's burst (its Select, Learner and
// Alpha to the whole audience, the SumStarts): a 1.1 KB Announce flooded to
// 1,000 owners 34 ms after it queued 1.1 MB behind the burst on the user's
// uplink, and the link's queue dropped the tail (14 of the user's packets
// in that attempt, 8.4 one-way delays against 5.8 in the others; issue 31).
// One round trip after the start the burst has been acknowledged; the rest
// of the attempt runs between the owners.
func (u *User) announceQuietIn() time.Duration {
	if u.state != UserShares && u.state != UserErrSum {
		return 0
	}
	srtt, measured := u.rtt.MaxSRTT(u.roster.IDs)
	if measured == 0 {
		return 0
	}
	return max(0, u.attemptAt.Add(srtt).Sub(u.life.Now()))
}

// runningAnnounceSlowdown bounds how far the running re-announcements slow
// down: at most this many announce intervals apart (8 s with the default
// interval of 1 s).
const runningAnnounceSlowdown = 8

// runningAnnounceAfter is how long after the last running re-announcement
// (or the roster) the next one goes: the announce interval doubled for each
// one sent, at most runningAnnounceSlowdown intervals.
func (u *User) runningAnnounceAfter() time.Duration {
	return u.cfg.Timing.AnnounceInterval * time.Duration(min(1<<min(u.runningAnnounces, 3), runningAnnounceSlowdown))
}

// growRoster, at an attempt's start, publishes the next roster version with
// the owners that joined after the rounds started and answered their check.
// Silent joiners never enter a later version, and members of the current one
// that never echoed theirs are left out of it (unless the plan needs them). With MaxRoster the roster
// grows only while its members that answered are fewer than the cap (the
// first version's silent members do not count), so at most 2·MaxRoster
// members; without it, maxJoiners bounds the joins held. The plan check
// holds for more owners than it held for at the start; the ring bound is
// checked again, and a roster it refuses does not grow.
func (u *User) growRoster() {
	if !u.growing() {
		return // the first attempt runs on the roster just fixed (and drawn)
	}
	in := make(map[protocol.PeerID]bool, len(u.roster.IDs))
	live := 0
	for _, p := range u.roster.IDs {
		in[p] = true
		if u.joined[p].live {
			live++
		}
	}
	var late []protocol.PeerID
	for p, j := range u.joined {
		if j.live && j.late && !in[p] {
			late = append(late, p)
		}
	}
	if len(late) == 0 {
		return
	}
	slices.Sort(late)
	if m := u.cfg.MaxRoster; m > 0 {
		room := max(m-live, 0)
		if len(late) > room {
			// By lot, as the first roster over the cap.
			u.cfg.SumRand.Shuffle(len(late), func(i, j int) { late[i], late[j] = late[j], late[i] })
			late = late[:room]
			slices.Sort(late)
		}
		if len(late) == 0 {
			return
		}
	}
	// The new version leaves out the members that never echoed their
	// check: they receive nothing (or answer nothing), and in a secure sum
	// over the roster (alpha mode securesum) a committee of them would fail
	// it. Unless the plan no longer fits the owners left: then they stay.
	var kept []protocol.PeerID
	for _, p := range u.roster.IDs {
		if !u.unproven(p) {
			kept = append(kept, p)
		}
	}
	if len(kept) < len(u.roster.IDs) && !u.cfg.Unchecked && u.cfg.Boost.CheckPlan(&u.us.Spec, len(kept)+len(late)) != nil {
		kept = u.roster.IDs
	}
	ids := append(slices.Clone(kept), late...)
	slices.Sort(ids)
	if err := u.checkRingBound(ids); err != nil {
		u.warnRate.Logf(hclog.Warn, "roster not grown", "roster not grown: the ring bound refuses it", "err", err)
		return
	}
	addrs, nonces := make([][]string, len(ids)), make([][]byte, len(ids))
	old := map[protocol.PeerID]int{}
	for i, p := range u.roster.IDs {
		old[p] = i
	}
	for i, p := range ids {
		if k, ok := old[p]; ok {
			// A member keeps the entry it has (its nonce is in the beacon).
			addrs[i], nonces[i] = u.roster.Addrs[k], u.roster.Nonces[k]
			continue
		}
		addrs[i], nonces[i] = u.joined[p].addrs, u.joined[p].nonce
	}
	u.roster = newRoster(u.cfg.Session, u.roster.Version+1, ids, addrs, nonces)
	u.log.Info("roster grown: owners that joined after the start answered the liveness check",
		"version", u.roster.Version, "added", len(late), "left_out", len(old)-len(kept), "owners", len(ids))
	u.publishRoster()
}

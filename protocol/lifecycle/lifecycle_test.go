package lifecycle

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/release"
)

// TestTransitionValidity is the whole table: every (from, to) pair, with
// the reason each allowed move exists.
func TestTransitionValidity(t *testing.T) {
	allowed := map[[2]Phase]string{
		{Idle, Admitting}:    "an owner joins an announced session; a user announces",
		{Idle, Running}:      "a resume from a checkpoint: the roster is known",
		{Idle, Aborted}:      "a user whose session fails before its announcement",
		{Admitting, Idle}:    "an owner the roster leaves out, or a refused session",
		{Admitting, Running}: "the roster is fixed",
		{Admitting, Aborted}: "an abort or idle timeout before the roster",
		{Running, Done}:      "the final result",
		{Running, Aborted}:   "an abort, an idle timeout, a failed round",
		{Done, Idle}:         "ready for the next session",
		{Done, Admitting}:    "the next announced session",
		{Aborted, Idle}:      "ready for the next session",
		{Aborted, Admitting}: "the next announced session",
		{Aborted, Running}:   "a resume after an abort",
	}
	for from := Idle; from <= Aborted; from++ {
		for to := Idle; to <= Aborted; to++ {
			_, want := allowed[[2]Phase{from, to}]
			if got := from.CanGo(to); got != want {
				t.Errorf("%s → %s: CanGo %v, want %v", from, to, got, want)
			}
		}
	}
	if Phase(9).CanGo(Idle) || Idle.CanGo(Phase(-1)) {
		t.Error("an unknown phase may move")
	}
}

func TestGoRefusesInvalidMoves(t *testing.T) {
	var s Session
	if err := s.Go(Done); err == nil {
		t.Fatal("idle → done allowed")
	}
	if s.Phase() != Idle {
		t.Fatalf("a refused move changed the phase to %s", s.Phase())
	}
	for _, p := range []Phase{Admitting, Running, Done} {
		if err := s.Go(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Leave(); err != nil {
		t.Fatal(err)
	}
	s.phase = Running
	if err := s.Leave(); err == nil {
		t.Fatal("left a running session without End")
	}
}

// TestReorder: a message that overtook what it depends on is held, retried
// after the next one that applies, in arrival order, and the buffer is
// bounded; a held message that fails once retried is reported as late.
func TestReorder(t *testing.T) {
	have := map[int]bool{0: true}
	var applied []int
	apply := func(x int) error { // x depends on x-1
		switch {
		case x < 0:
			return errors.New("bad")
		case have[x]:
			return errors.New("duplicate")
		case !have[x-1]:
			return ErrEarly
		}
		have[x] = true
		applied = append(applied, x)
		return nil
	}
	var late []error
	b := Reorder[int]{Max: 3}
	for _, x := range []int{3, 2, 4} {
		if err := b.Apply(x, apply, func(err error) { late = append(late, err) }); err != nil {
			t.Fatalf("apply %d: %v", x, err)
		}
	}
	if err := b.Apply(5, apply, nil); !errors.Is(err, ErrReorderFull) {
		t.Fatalf("a 4th early message: %v, want ErrReorderFull", err)
	}
	if err := b.Apply(1, apply, func(err error) { late = append(late, err) }); err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 2, 3, 4}; !reflect.DeepEqual(applied, want) || b.Len() != 0 || len(late) != 0 {
		t.Fatalf("applied %v held %d late %v, want %v, 0, none", applied, b.Len(), late, want)
	}
	// A held message that becomes a duplicate is discarded as late.
	b.Apply(6, apply, nil)
	have[6] = true
	b.Apply(5, apply, func(err error) { late = append(late, err) })
	if len(late) != 1 || b.Len() != 0 {
		t.Fatalf("late %v held %d, want one duplicate and none held", late, b.Len())
	}
}

type ledger struct {
	spent []string
	fail  error
}

func (l *ledger) Spend(session string, round, attempt uint32, eps float64) error {
	if l.fail != nil {
		return l.fail
	}
	l.spent = append(l.spent, fmt.Sprintf("%s/%d/%d=%g", session, round, attempt, eps))
	return nil
}
func (l *ledger) Spent() float64            { return 0 }
func (l *ledger) Budget() float64           { return 10 }
func (l *ledger) Contributed(s string) bool { return false }

// TestReleaseChargesBeforeSending: the send runs only after the ledger
// holds the charge, and never when the charge fails or the mechanism has
// no finite loss.
func TestReleaseChargesBeforeSending(t *testing.T) {
	l := &ledger{}
	gate := func(l protocol.Ledger) *release.Values { return &release.Values{Ledger: l, Secret: []byte("k")} }
	s := Session{Ledger: l, Drops: &protocol.Counters{}, Values: gate(l)}
	var order []string
	name := release.Name{System: "wc", Session: "s1", Kind: "share"}
	charge := release.Charge{Key: "s1", Round: 2, Attempt: 1, Mech: release.Exact{Charge: 0.5}}
	_, eps, fresh, err := s.Release(name, charge, nil, func(*rand.Rand) (any, error) {
		order = append(order, fmt.Sprintf("send after %d charges", len(l.spent)))
		s.Out.Publish("t", []byte("share"))
		return 1, nil
	})
	if err != nil || eps != 0.5 || !fresh || !reflect.DeepEqual(order, []string{"send after 1 charges"}) || l.spent[0] != "s1/2/1=0.5" {
		t.Fatalf("eps %g err %v order %v spent %v", eps, err, order, l.spent)
	}
	if got := s.Take(); !reflect.DeepEqual(got, []engine.Effect{engine.Publish{Topic: "t", Data: []byte("share")}}) {
		t.Fatalf("effects %v", got)
	}
	for _, c := range []struct {
		name string
		l    *ledger
		m    release.Mechanism
	}{
		{"ledger refuses", &ledger{fail: protocol.ErrBudgetExceeded}, release.Exact{Charge: 0.5}},
		{"unbounded", &ledger{}, release.Exact{Charge: 0}},
	} {
		s := Session{Ledger: c.l, Values: gate(c.l)}
		if _, _, _, err := s.Release(name, release.Charge{Key: "s1", Mech: c.m}, nil, func(*rand.Rand) (any, error) { t.Errorf("%s: sent", c.name); return nil, nil }); err == nil {
			t.Errorf("%s: no error", c.name)
		}
		if len(c.l.spent) != 0 || s.Out.Pending() != 0 {
			t.Errorf("%s: spent %v, %d effects", c.name, c.l.spent, s.Out.Pending())
		}
	}
	if _, _, _, err := (&Session{}).Release(name, charge, nil, func(*rand.Rand) (any, error) { t.Error("sent without a ledger"); return nil, nil }); err == nil {
		t.Error("released without a ledger")
	}
}

// TestSessionEffects: joining arms the idle timer, hearing the user
// re-arms it, and End cancels the timers and notifies once, with the
// outcome, as Done or Aborted.
func TestSessionEffects(t *testing.T) {
	var s Session
	s.Begin(time.Unix(100, 0))
	if err := s.Join("s1", Admitting, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	s.Begin(time.Unix(110, 0))
	s.Heard()
	want := []engine.Effect{engine.SetTimer{Name: TimerIdle, After: 30 * time.Second}}
	if got := s.Take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("join and a word from the user: %v, want %v (Heard arms nothing)", got, want)
	}
	// The timer fires 30 s after the join: the user spoke at 110, so it
	// runs on for 10 s; at 140 the user has been silent for 30 s.
	s.Begin(time.Unix(130, 0))
	if s.IdleExpired() {
		t.Fatal("expired 20 s after the user's last word")
	}
	if got := s.Take(); !reflect.DeepEqual(got, []engine.Effect{engine.SetTimer{Name: TimerIdle, After: 10 * time.Second}}) {
		t.Fatalf("re-armed with %v, want the 10 s left", got)
	}
	s.Begin(time.Unix(140, 0))
	if !s.IdleExpired() || s.Out.Pending() != 0 {
		t.Fatal("not expired after 30 s of silence")
	}
	s.Go(Running)
	out := protocol.NewOutcome(3, 5, "", errors.New("budget"))
	s.End(out)
	s.End(out)
	want = []engine.Effect{engine.CancelTimer{Name: TimerIdle}, engine.CancelTimer{Name: TimerStep},
		engine.Notify{Event: engine.EventFinal, Round: 3, Reason: out.Reason, Value: out}}
	if got := s.Take(); !reflect.DeepEqual(got, want) || s.Phase() != Done || s.Outcome() != out {
		t.Fatalf("end: %v phase %s, want %v done", got, s.Phase(), want)
	}
	// A failure, and an end before the roster, abort.
	for _, c := range []struct {
		from Phase
		out  protocol.Outcome
	}{{Running, protocol.Failed(1, 5, "", errors.New("x"))}, {Admitting, protocol.NewOutcome(5, 5, "", nil)}} {
		s := Session{phase: c.from}
		s.End(c.out)
		effects := s.Take()
		if n := effects[len(effects)-1].(engine.Notify); n.Event != engine.EventAborted || s.Phase() != Aborted {
			t.Errorf("end from %s with %s: %v, phase %s", c.from, c.out, n, s.Phase())
		}
	}
}

func TestOwnerStateOf(t *testing.T) {
	want := map[Phase]OwnerState{Idle: OwnerIdle, Admitting: OwnerJoined, Running: OwnerJoined, Done: OwnerDone, Aborted: OwnerIdle}
	for p, s := range want {
		if got := OwnerStateOf(p); got != s {
			t.Errorf("OwnerStateOf(%s) = %s, want %s", p, got, s)
		}
	}
}

func (l *ledger) Bind(string, []byte) error { return nil }
func (l *ledger) SpentIn(string) float64    { return 0 }

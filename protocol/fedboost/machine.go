package fedboost

import (
	"errors"
	"time"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/lifecycle"
)

// What the two machines share to run on the engine: the driver they are
// bound to, and the adapters through which their secure-sum sub-machines
// (a party, a coordinator) write into the role's Out and read the input's
// time.

// errUnknownTimer refuses the expiry of a timer the machine never names.
var errUnknownTimer = errors.New("fedboost: unknown timer")

// newDriver is a role's driver: it counts the inputs its inbox drops
// ("loop: inbox full", "loop: closed") with the role's drops and publishes
// the role's status snapshot after every event.
func newDriver(clock protocol.Clock, stats *protocol.Counters, after func()) *engine.Driver {
	return engine.NewDriver(engine.Config{Clock: clock, OnDrop: func(reason string) { stats.Inc("loop: " + reason) },
		AfterEvent: after})
}

// outPoster posts into a machine's Out: what a secure-sum sub-machine
// sends becomes a Send effect of the role's transition
// (securesum.PosterEnvFor marshals, once per envelope).
type outPoster struct{ out *engine.Out }

func (p outPoster) Send(to protocol.PeerID, protocolID string, data []byte) {
	p.out.Send(to, protocolID, data)
}

func (p outPoster) Publish(topic string, data []byte) { p.out.Publish(topic, data) }

// sessionClock is a sub-machine's clock: Now is the time of the input the
// role is deciding (lifecycle.Session.Begin), never the wall clock. The
// sub-machines arm their timers through Env.Timers (the role's Out), so
// AfterFunc is never called; if it were, the timer would never fire, and
// the sum's own step timer would end it.
type sessionClock struct{ s *lifecycle.Session }

func (c sessionClock) Now() time.Time { return c.s.Now() }

func (c sessionClock) AfterFunc(time.Duration, func()) protocol.Timer { return stoppedTimer{} }

type stoppedTimer struct{}

func (stoppedTimer) Stop() bool { return false }

// moves records the phases a machine passed through in its current
// transition, the first being the phase it began in: one input may make
// several moves (an announcement admits and runs; an abort ends and
// leaves), and the table tests check each against lifecycle's CanGo. It
// reuses its array: no allocation per input.
type moves []lifecycle.Phase

func (m *moves) begin(s *lifecycle.Session) { *m = append((*m)[:0], s.Phase()) }

// note records s's phase if it moved.
func (m *moves) note(s *lifecycle.Session) {
	if p := s.Phase(); len(*m) == 0 || (*m)[len(*m)-1] != p {
		*m = append(*m, p)
	}
}

package simulate

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
	"github.com/ppboost/ppboost/protocol/session"
)

// Run executes one Wang & Chang session and returns its model and
// measurements.
func Run(o Options) (*Result, error) {
	p, err := newPlan(o)
	if err != nil {
		return nil, err
	}
	r := newRun(p)
	defer r.net.Close()
	if err := r.start(); err != nil {
		return nil, err
	}
	return r.finish(r.play())
}

// run is one Wang & Chang session on its network.
type run struct {
	p       plan
	start0  time.Time
	net     *memnet.Network
	clock   protocol.Clock
	share   *shared
	ids     []protocol.PeerID
	owners  []*session.Owner
	ledgers []protocol.Ledger
	user    *session.User
	res     *Result
	// waiting holds the owners still in a session once the user is done;
	// OnEnd removes them, so the end of a run is not an O(n) scan per event.
	waiting  map[int]bool
	last     *session.Checkpoint // the user's newest checkpoint
	silence  *rand.Rand
	done     bool
	runErr   error // the user's
	faultErr error
}

func newRun(p plan) *run {
	n := len(p.opts.Data.Owners)
	net := memnet.New(p.net)
	r := &run{p: p, start0: time.Now(), net: net, clock: net.Clock(),
		ids: p.ownerIDs(), owners: make([]*session.Owner, n), ledgers: make([]protocol.Ledger, n),
		res: &Result{Owners: n, Releases: make([]int, n), Dealings: make([]int, n), Killed: make([]bool, n),
			OwnerOutcomes: make([]protocol.Outcome, n)},
		waiting: map[int]bool{}, silence: p.silenceRand()}
	if !p.opts.noShare {
		r.share = newShared() // this run's owners share decoded messages and rosters
	}
	return r
}

// start joins the owners and the user, lets Setup change the network, and
// schedules the faults.
func (r *run) start() error {
	for i := range r.owners {
		if err := r.addOwner(i); err != nil {
			return err
		}
	}
	uep, err := r.net.Join(UserID)
	if err != nil {
		return err
	}
	if r.p.opts.Setup != nil {
		r.p.opts.Setup(r.net, UserID, r.ids) // before the user announces
	}
	if r.user, err = r.startUser(uep, nil); err != nil {
		return err
	}
	for _, f := range r.p.opts.Faults {
		r.clock.AfterFunc(f.At, func() { r.fault(f) })
	}
	return nil
}

func (r *run) addOwner(i int) error {
	ep, err := r.net.Join(r.ids[i])
	if err != nil {
		return err
	}
	cfg := r.p.owner(i)
	if r.p.opts.Owner != nil {
		r.p.opts.Owner(i, &cfg)
	}
	r.ledgers[i] = protocol.NewMemLedger(r.p.budget)
	cfg.Ledger = countingLedger{r.ledgers[i], &r.res.Releases[i], &r.res.Dealings[i]}
	if r.share != nil {
		cfg.Share = r.share
	}
	// The endpoint's clock (role.Resolve): its timers die with it when a
	// fault test kills it; the endpoint posts inline.
	cfg.OnEnd = func(string, string) { delete(r.waiting, i) }
	cfg.OnOutcome = func(_ string, out protocol.Outcome) { r.res.OwnerOutcomes[i] = out }
	r.owners[i], err = session.StartOwner(ep, cfg)
	return err
}

// startUser starts the data user on ep (a fresh one, or one resuming a
// checkpoint after a restart fault).
func (r *run) startUser(ep *memnet.Endpoint, resume *session.Checkpoint) (*session.User, error) {
	cfg := r.p.user(r.res.UserRestarts, resume)
	cfg.OnRound = r.onRound
	cfg.Checkpoint = func(c session.Checkpoint) { r.last = &c }
	cfg.OnDone = func(m *boost.Model, err error) { r.res.Model, r.runErr, r.done = m, err, true }
	return session.StartUser(ep, cfg)
}

func (r *run) onRound(rep session.RoundReport) {
	r.res.Rounds = append(r.res.Rounds, rep)
	for k := 0; k < r.p.opts.SilentPerRound; k++ {
		r.silenceOne()
	}
	if r.p.opts.OnRound != nil {
		r.p.opts.OnRound(rep)
	}
}

// silenceOne kills a live owner chosen on the run's silence stream (it
// gives up after 100 draws that hit dead owners).
func (r *run) silenceOne() {
	for tries := 0; tries < 100; tries++ {
		i := r.silence.IntN(len(r.ids))
		if !r.res.Killed[i] {
			r.net.Kill(r.ids[i])
			r.res.Killed[i] = true
			return
		}
	}
}

// fault plays one scheduled fault.
func (r *run) fault(f Fault) {
	if r.done && (f.Kind == KillUser || f.Kind == RestartUser) {
		return // the session is over: nothing left to crash or resume
	}
	switch f.Kind {
	case KillOwner:
		r.net.Kill(r.ids[f.Owner])
		r.res.Killed[f.Owner] = true
	case PauseOwner:
		r.net.Pause(r.ids[f.Owner], f.For)
	case IsolateOwner:
		rest := make([]protocol.PeerID, 0, len(r.ids))
		for i, id := range r.ids {
			if i != f.Owner {
				rest = append(rest, id)
			}
		}
		r.net.Partition(append(rest, UserID), []protocol.PeerID{r.ids[f.Owner]})
		r.clock.AfterFunc(f.For, r.net.Heal)
	case KillUser:
		r.net.Kill(UserID)
	case RestartUser:
		if err := r.restartUser(); err != nil {
			r.faultErr = fmt.Errorf("restarting the user: %w", err)
			r.done = true
		}
	}
}

// restartUser starts a data user with the same id from the last checkpoint.
func (r *run) restartUser() error {
	r.res.UserRestarts++
	ep, err := r.net.Join(UserID)
	if err != nil {
		return err
	}
	u, err := r.startUser(ep, r.last)
	if err != nil {
		return err
	}
	r.user = u
	return nil
}

// play runs the network until the user is done (or MaxVirtual), sampling
// the heap every 200,000 events.
func (r *run) play() error {
	t0 := r.clock.Now()
	var ms runtime.MemStats
	events := 0
	err := r.net.RunUntil(func() bool {
		events++
		if events%200000 == 0 {
			runtime.ReadMemStats(&ms)
			r.res.PeakHeap = max(r.res.PeakHeap, ms.HeapInuse)
		}
		return r.done
	}, r.p.opts.MaxVirtual)
	runtime.ReadMemStats(&ms)
	r.res.PeakHeap = max(r.res.PeakHeap, ms.HeapInuse)
	r.res.Virtual = r.clock.Now().Sub(t0)
	return err
}

// finish waits for the owners to leave and measures; err is play's.
func (r *run) finish(err error) (*Result, error) {
	if err != nil && !r.done {
		st, uerr := r.user.State()
		r.collect()
		return r.res, fmt.Errorf("simulate: %w (user state %s, error %v)", err, st, uerr)
	}
	if r.faultErr != nil {
		r.collect()
		return r.res, r.faultErr
	}
	// The session is over for the user: the owners leave on Final or Abort,
	// or after the idle timeout if they missed both.
	for i, ow := range r.owners {
		if st, _ := ow.State(); st == session.OwnerJoined && !r.res.Killed[i] {
			r.waiting[i] = true
		}
	}
	_ = r.net.RunUntil(func() bool { return len(r.waiting) == 0 }, r.p.leaveWait())
	r.collect()
	r.traffic()
	return r.res, r.runErr
}

// collect records the wall time, the user's outcome and every owner's
// state and spend.
func (r *run) collect() {
	res := r.res
	res.Wall = time.Since(r.start0)
	res.Outcome = r.user.Outcome()
	res.OwnerStates, res.Spent = nil, nil
	for i, ow := range r.owners {
		st, _ := ow.State()
		res.OwnerStates = append(res.OwnerStates, st)
		res.Spent = append(res.Spent, r.ledgers[i].Spent())
	}
	res.Ledgers = r.ledgers
}

// traffic records the messages and bytes sent and the drops counted.
func (r *run) traffic() {
	res := r.res
	msgs, bytes := sent(r.net, r.ids)
	res.OwnerMsgs = float64(msgs) / float64(len(r.ids))
	res.OwnerBytes = float64(bytes) / float64(len(r.ids))
	res.UserMsgs, res.UserBytes = sent(r.net, []protocol.PeerID{UserID})
	res.TotalMsgs = r.net.TotalStats().MsgsSent
	res.Dropped = r.user.Stats().Snapshot()
	for _, ow := range r.owners {
		addDrops(res.Dropped, ow.Stats().Snapshot())
	}
}

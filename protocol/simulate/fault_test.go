package simulate

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/conformance"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
)

// Fault scenarios in the style of raft's fuzzy tests: each seed draws a
// network size, a secure sum, a loss rate and a handful of faults (owners
// killed, paused, cut off; the data user killed and restarted from its
// checkpoint), plays a whole session in virtual time, and checks the
// invariants at the end:
//
//   - the session ends: the user finishes or fails with an error, within a
//     bounded virtual time (nothing waits forever);
//   - no owner releases more than one share or spends past its budget;
//   - every live owner has left the session (Final, Abort or idle timeout);
//   - a finished session has all its rounds; without faults or loss its
//     model equals boost.Train's.
//
// A third of the scenarios (their own draw) run with distributed privacy:
// the shares go through a single-instance share sum that needs 4 of the 6
// selected owners; a silent or paused selected owner can fail an attempt.
//
// `go test ./protocol/simulate -run FaultScenarios` plays a fast subset;
// `go test ./protocol/simulate -run FaultScenarios -fault.seeds 1000 -v`
// is the long run (its summary line is the figure for the docs).
var faultSeeds = flag.Int("fault.seeds", 0, "fault scenarios to play (0: 12, or 4 with -short)")

type scenario struct {
	seed   uint64
	owners int
	method string
	alpha  boost.AlphaMode
	drop   float64
	faults []Fault
	// distributed: the round's shares go through a share sum (privacy
	// distributed, noise off so that the model can be compared).
	distributed bool
}

func (s scenario) String() string {
	var f []string
	for _, x := range s.faults {
		f = append(f, fmt.Sprintf("%s@%v", []string{"kill", "pause", "isolate", "kill-user", "restart-user"}[x.Kind], x.At))
	}
	priv := "ldp"
	if s.distributed {
		priv = "distributed"
	}
	return fmt.Sprintf("seed=%d owners=%d %s/%s/%s drop=%g faults=[%s]", s.seed, s.owners, s.method, s.alpha, priv, s.drop, strings.Join(f, " "))
}

func drawScenario(seed uint64, maxOwners int) scenario {
	r := rand.New(rand.NewPCG(seed, 0x6661756c74))
	s := scenario{seed: seed, owners: 60, method: securesum.Shamir, alpha: boost.AlphaSecureSum}
	if maxOwners > 60 && r.IntN(4) == 0 {
		s.owners = []int{120, 300, maxOwners}[r.IntN(3)]
	}
	if r.IntN(2) == 0 {
		s.method = securesum.Ring
	}
	if r.IntN(3) == 0 {
		s.alpha = boost.AlphaValidation
	}
	s.drop = []float64{0, 0, 0.001, 0.01, 0.05}[r.IntN(5)]
	at := func() time.Duration { return time.Duration(r.Int64N(int64(40 * time.Second))) }
	nFaults := r.IntN(4)
	userKilled := false
	for i := 0; i < nFaults; i++ {
		switch k := FaultKind(r.IntN(4)); k {
		case KillUser:
			if userKilled {
				continue // one user crash per scenario: kill and restart must not overlap
			}
			userKilled = true
			t := at()
			s.faults = append(s.faults, Fault{At: t, Kind: KillUser},
				Fault{At: t + time.Duration(1+r.IntN(20))*time.Second, Kind: RestartUser})
		default:
			s.faults = append(s.faults, Fault{At: at(), Kind: k, Owner: r.IntN(s.owners),
				For: time.Duration(5+r.IntN(60)) * time.Second})
		}
	}
	// A stream of its own, so that adding it left the other draws (and the
	// outcomes recorded for them) unchanged.
	s.distributed = rand.New(rand.NewPCG(seed, 0x70726976)).IntN(3) == 0
	if s.distributed {
		s.method = securesum.Shamir // distributed privacy refuses rings
	}
	return s
}

var (
	dataMu    sync.Mutex
	dataCache = map[int]boost.Data{}
)

func faultConfig(s scenario) boost.Config {
	cfg := boost.DefaultConfig()
	cfg.Learner, cfg.Mechanism, cfg.Alpha = boost.Stump, "none", s.alpha
	cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = 6, 3, 7
	if s.distributed {
		// A share sum needs 4 of the 6 selected owners (drop fraction 1/3).
		cfg.Privacy, cfg.DropFraction = boost.PrivacyDistributed, 0.34
	}
	return cfg
}

func faultData(t *testing.T, owners int, cfg boost.Config) boost.Data {
	dataMu.Lock()
	defer dataMu.Unlock()
	if d, ok := dataCache[owners]; ok {
		return d
	}
	d, err := boost.Prepare(boost.DataSpec{Source: "synthetic", Owners: owners, SamplesPerOwner: 20,
		UserSamples: 500, TestSamples: 500, Seed: 7}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	dataCache[owners] = d
	return d
}

// maxSessionVirtual bounds a session in virtual time: 3 rounds x 5
// attempts, each a share timeout and two sums with their probes and
// re-forms, with room to spare.
const maxSessionVirtual = 2 * time.Hour

func TestFaultScenarios(t *testing.T) {
	n := *faultSeeds
	if n == 0 {
		n = 12
		if testing.Short() {
			n = 4
		}
	}
	maxOwners := 60
	if n >= 100 {
		maxOwners = 1000
	}
	outcomes := map[string]int{}
	var mu sync.Mutex
	for i := 1; i <= n; i++ {
		s := drawScenario(uint64(i), maxOwners)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			outcome := playScenario(t, s)
			mu.Lock()
			outcomes[outcome]++
			mu.Unlock()
		})
	}
	t.Logf("%d fault scenarios: %s", n, protocol.FormatCounts(outcomes, " ", func(k string, v int) string { return fmt.Sprintf("%s=%d", k, v) }))
}

// playScenario runs one scenario, checks the invariants and names the outcome.
func playScenario(t *testing.T, s scenario) string {
	cfg := faultConfig(s)
	data := faultData(t, s.owners, cfg)
	p := securesum.DefaultParams()
	p.Method = s.method
	res, err := Run(Options{Boost: cfg, Sum: p, Data: data, DropRate: s.drop, Faults: s.faults,
		MaxVirtual: maxSessionVirtual,
		Timing: session.Timing{AnnounceInterval: 100 * time.Millisecond, JoinTimeout: time.Minute,
			ShareTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute}})
	if res == nil {
		t.Fatalf("%v: no result: %v", s, err)
	}
	if err != nil && strings.HasPrefix(err.Error(), "simulate:") {
		t.Fatalf("%v: the session did not end within %v of virtual time: %v", s, maxSessionVirtual, err)
	}
	for i := range res.Releases {
		if res.Releases[i] > 1 {
			t.Errorf("%v: owner %d released %d shares", s, i, res.Releases[i])
		}
		// Mechanism none: a share and each err dealing are charged 1 (the
		// owners' none charge); the budget is the plan's worst case.
		if budget := cfg.OwnerWorstCase(1); res.Spent[i] > budget+1e-9 {
			t.Errorf("%v: owner %d spent %v of a budget of %v", s, i, res.Spent[i], budget)
		}
		if want := float64(res.Releases[i] + res.Dealings[i]); math.Abs(res.Spent[i]-want) > 1e-9 {
			t.Errorf("%v: owner %d spent %v for %d shares and %d err dealings", s, i, res.Spent[i], res.Releases[i], res.Dealings[i])
		}
		if res.OwnerStates[i] == session.OwnerJoined && !res.Killed[i] {
			t.Errorf("%v: owner %d is still waiting in the session", s, i)
		}
		// One outcome: an owner that heard the session's end logs the data
		// user's, word for word; only one that missed it states its own.
		// Without faults or loss every owner hears it.
		o := res.OwnerOutcomes[i]
		clean := len(s.faults) == 0 && s.drop == 0
		// (One that never joined, cut off during the join window, has none.)
		if !res.Killed[i] && (o != protocol.Outcome{} || clean) && (o.Own && clean || !o.Own && o != res.Outcome) {
			t.Errorf("%v: owner %d ended with %q (own %v), the data user with %q", s, i, o, o.Own, res.Outcome)
		}
	}
	if err != nil {
		t.Logf("%v: %v", s, err)
		return outcomeOf(err)
	}
	if len(res.Model.Rounds) != cfg.Rounds {
		t.Fatalf("%v: finished with %d rounds, want %d", s, len(res.Model.Rounds), cfg.Rounds)
	}
	// A restarted user continues with a fresh attempt and fresh owners (the
	// started attempt's sums are never opened again), so only runs without
	// faults keep the reference model; a restart must still finish.
	if len(s.faults) == 0 && s.drop == 0 {
		ref, rerr := boost.Train(cfg, data, nil)
		if rerr != nil {
			t.Fatal(rerr)
		}
		t.Logf("%v: comparing with the reference trainer", s)
		conformance.SameModel(t, ref, res.Model)
	}
	return "finished"
}

func outcomeOf(err error) string {
	switch {
	case errors.Is(err, boost.ErrOutOfOwners):
		return "failed:out-of-owners"
	case errors.Is(err, boost.ErrNoProgress):
		return "failed:no-progress"
	case errors.Is(err, securesum.ErrTooFew):
		return "failed:sum-too-few"
	}
	return "failed:other"
}

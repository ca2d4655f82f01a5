package hostile_test

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/hostile"
	"github.com/ppboost/ppboost/protocol/release"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/simulate"
	"github.com/ppboost/ppboost/protocol/wire"
)

var (
	seeds = flag.Int("hostile.seeds", 0, "seeds per system for TestHostileFuzz (0: 6 under -short, 40 without)")
	first = flag.Int("hostile.first", 1, "first seed of TestHostileFuzz")
)

// fedRun is one federated session against a hostile data user.
type fedRun struct {
	newton bool
	// classes is the synthetic data's (0: 2); newton with 3 runs K
	// boosters (one vector of the K trees' leaf sums per round).
	classes int
	owners  int
	rate    float64
	// control: "" (the real owners), "forget" (every owner's gate without
	// memory: the replay bug), "uncharged" (one charge removed from a
	// ledger after the run).
	control string
	// replay, if set, replaces the random adversary by a deterministic
	// one: every SumStart of tree 1 is sent again under each of these
	// (attempt, purpose) pairs ("" keeps the purpose).
	replay []hostileCopy
}

type hostileCopy struct {
	attempt uint32
	purpose func(string) string
}

func fedConfig(newton bool, classes, owners int) (fedboost.Public, []*dataset.Dataset, error) {
	scfg := dataset.DefaultSynthetic(80*owners, 11)
	scfg.Features, scfg.Informative, scfg.Redundant = 5, 4, 1
	if classes > 2 {
		scfg.Classes, scfg.ClustersPerClass = classes, 1
	}
	union, err := dataset.Synthetic(scfg)
	if err != nil {
		return fedboost.Public{}, nil, err
	}
	union.Schema = union.IdentitySchema()
	parts, err := union.Partition(owners, nil, 5)
	if err != nil {
		return fedboost.Public{}, nil, err
	}
	maxRows := 0
	for _, p := range parts {
		maxRows = max(maxRows, p.Len())
	}
	var cfg dpboost.Config
	if newton {
		cfg = dpboost.NewtonRule(2, 80*owners, 2)
		cfg.Trees, cfg.EnsembleSize, cfg.Bins, cfg.Lambda, cfg.Depth = 3, 3, 8, 5, 2
	} else {
		cfg = dpboost.DefaultConfig()
		cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Bins, cfg.Lambda, cfg.Epsilon, cfg.ClipGradients = 2, 2, 2, 8, 20, 8, true
	}
	sum := securesum.DefaultParams()
	// A committee of every owner: a SumStart keeps its committee whatever
	// its attempt or purpose, so the mutated copies pass the committee
	// check and reach the owners' release decisions.
	sum.Committee, sum.MinParties, sum.Bound = owners, 3, float64(maxRows)
	sum.Timeout, sum.PingTimeout = 400*time.Millisecond, 200*time.Millisecond
	return fedboost.Public{Boost: cfg, Schema: union.Schema, Dim: union.Dim(), SplitFraction: 0.8, Noise: true,
		Colluders: -1, DropFraction: 0.25, Sum: sum, MaxRows: maxRows, StepTimeout: time.Minute, IdleTimeout: 10 * time.Minute}, parts, nil
}

// run plays one seed and checks it.
func (f fedRun) run(seed uint64) (hostile.Report, map[string]int, error) {
	pub, parts, err := fedConfig(f.newton, f.classes, f.owners)
	if err != nil {
		return hostile.Report{}, nil, err
	}
	if f.classes > 2 && pub.Boosters() != f.classes {
		return hostile.Report{}, nil, fmt.Errorf("a session of %d boosters for %d classes", pub.Boosters(), f.classes)
	}
	var honest []protocol.PeerID
	for i := range parts {
		honest = append(honest, simulate.OwnerID(i))
	}
	adv := hostile.New(seed, simulate.UserID, honest, f.rate)
	// The session as the user announces it (simulate.RunFed's naming).
	final := pub
	final.Session, final.Beacon, final.Roster = fmt.Sprintf("fed-%016x", seed), []byte(fmt.Sprintf("beacon-%d", seed)), honest
	adv.Fix = func(m *wire.Envelope) {
		ss, h := m.GetSumStart(), m.GetHeader()
		t := int(h.GetRound())
		if ss == nil || t < 1 || t > final.Boost.Trees {
			return
		}
		com := securesum.Committee(final.Group(t), final.SumParams(t).Committee, final.Beacon, h, ss.GetPurpose(), ss.GetInstance())
		if len(ss.GetCommittee()) > 0 {
			ss.Committee = nil
			for _, c := range com {
				ss.Committee = append(ss.Committee, string(c))
			}
		} else {
			ss.CommitteeDigest = securesum.CommitteeDigest(com)
		}
	}
	tap := adv.Tap
	if f.replay != nil {
		tap = replayer(adv, f.replay)
	}
	adv.Obs.SlotOf = func(s hostile.Slot) hostile.Slot { s.Attempt = 0; return s } // one attempt per federated sum
	res, _ := simulate.RunFed(simulate.FedOptions{Public: pub, Owners: parts, Seed: seed, Tap: tap,
		MaxVirtual: 2 * time.Hour,
		Owner: func(i int, c *fedboost.OwnerConfig) {
			if f.control == "forget" {
				c.OnGate = func(g *release.Values) { g.Forget = true }
			}
		}})
	if res == nil {
		return hostile.Report{}, nil, fmt.Errorf("seed %d: no result", seed)
	}
	if res.Session != final.Session {
		return hostile.Report{}, nil, fmt.Errorf("session %q, the adversary computed %q", res.Session, final.Session)
	}
	ledgers := map[protocol.PeerID]hostile.Ledger{}
	for i, l := range res.Ledgers {
		ledgers[simulate.OwnerID(i)] = l
	}
	if f.control == "uncharged" {
		for _, l := range res.Ledgers {
			if l.Spent() > 0 {
				l.Forget(fedboost.ChargeKey(&final, 1))
				if f.newton {
					break
				}
			}
		}
	}
	rep := hostile.Check(adv.Obs, ledgers, func(s hostile.Slot) (string, float64, bool) {
		if s.Kind != "sum" || s.Session != final.Session || s.Round < 1 || int(s.Round) > final.Boost.Trees {
			return "", 0, false
		}
		key := fedboost.ChargeKey(&final, int(s.Round))
		l := ledgers[s.Owner].(*protocol.MemLedger)
		return key, l.KeySpent(key), true
	})
	return rep, adv.Mutations(), nil
}

// replayer passes everything and sends every SumStart of tree 1 again
// under each copy's attempt and purpose.
func replayer(adv *hostile.Adversary, copies []hostileCopy) func(from, to protocol.PeerID, topic bool, name string, data []byte) [][]byte {
	return func(from, to protocol.PeerID, topic bool, name string, data []byte) [][]byte {
		adv.Obs.See(from, to, topic, name, data)
		out := [][]byte{data}
		if from != simulate.UserID || topic {
			return out
		}
		for _, c := range copies {
			if b := hostile.Resend(data, 1, c.attempt, c.purpose, adv.Fix); b != nil {
				adv.Obs.See(from, to, topic, name, b)
				out = append(out, b)
			}
		}
		return out
	}
}

// The replay attacks of issue 30 as deterministic plays: a data user
// re-opens every sum of tree 1 under header attempt numbers 1..31, and
// under other spellings of its purpose (leaves/00, leaves/+0, leaves/0x,
// leaves/0 , ...). Before the gate named values by what they are, every
// owner dealt each copy with fresh noise under one charge (the observer
// reconstructs 32 different dealings of one leaf sum); now the copies are
// refused or get the very same value.
func TestReplayPlays(t *testing.T) {
	attempts := make([]hostileCopy, 0, 31)
	for a := uint32(1); a < 32; a++ {
		attempts = append(attempts, hostileCopy{attempt: a})
	}
	var spellings []hostileCopy
	for _, f := range []func(string) string{
		func(p string) string { return hostile.Respelled(p, "0") },
		func(p string) string { return hostile.Respelled(p, "+") },
		func(p string) string { return hostile.Respelled(p, "00") },
		func(p string) string { return p + "x" },
		func(p string) string { return p + " " },
		func(p string) string { return " " + p },
		func(p string) string { return p + "/" },
	} {
		spellings = append(spellings, hostileCopy{purpose: f})
	}
	for _, c := range []struct {
		name   string
		newton bool
		copies []hostileCopy
		// controls: the negative controls this play must catch (the
		// spellings are refused before the gate: no control reaches it)
		controls []string
	}{
		{"newton/attempts", true, attempts, []string{"forget"}},
		{"newton/spellings", true, spellings, nil},
		{"dpboost/attempts", false, attempts[:7], []string{"forget"}},
		{"dpboost/spellings", false, spellings, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, control := range append([]string{""}, c.controls...) {
				rep, _, err := fedRun{newton: c.newton, owners: 8, replay: c.copies, control: control}.run(3)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("control %q: %d values, %d findings, implied/charged owner-0 %.3g/%.3g", control, rep.Values, len(rep.Findings),
					rep.Implied[simulate.OwnerID(0)], rep.Charged[simulate.OwnerID(0)])
				switch {
				case control == "" && len(rep.Findings) > 0:
					t.Fatalf("%d findings, first: %v", len(rep.Findings), rep.Findings[0])
				case control == "" && rep.Values == 0:
					t.Fatal("the observer saw no value: the play checks nothing")
				case control == "forget" && len(rep.Findings) == 0:
					t.Fatal("negative control: with the gate's memory off the replay went unnoticed")
				}
			}
		})
	}
}

// fuzzSystem is one system the fuzzer plays: run(seed, control).
type fuzzSystem struct {
	name     string
	run      func(seed uint64, control string) (hostile.Report, map[string]int, error)
	controls []string
}

func fuzzSystems() []fuzzSystem {
	return []fuzzSystem{
		{"newton", func(s uint64, c string) (hostile.Report, map[string]int, error) {
			return fedRun{newton: true, owners: 6, rate: 0.5, control: c}.run(s)
		}, []string{"forget", "uncharged"}},
		{"newton-k3", func(s uint64, c string) (hostile.Report, map[string]int, error) {
			return fedRun{newton: true, classes: 3, owners: 6, rate: 0.5, control: c}.run(s)
		}, []string{"forget", "uncharged"}},
		{"dpboost", func(s uint64, c string) (hostile.Report, map[string]int, error) {
			return fedRun{newton: false, owners: 6, rate: 0.5, control: c}.run(s)
		}, []string{"forget", "uncharged"}},
		// W&C's err dealing is also guarded outside the gate (an owner that
		// holds a dealing's charge but not its value deals nothing), so
		// switching the gate's memory off shows nothing there.
		{"wc", func(s uint64, c string) (hostile.Report, map[string]int, error) { return runWC(s, 6, 0.5, c) },
			[]string{"uncharged"}},
		{"pfds", func(s uint64, c string) (hostile.Report, map[string]int, error) { return runPFDS(s, 4, 0.7, c) },
			[]string{"uncharged"}},
	}
}

// TestHostileFuzz plays seeded sessions of W&C (stumps, Shamir err sums),
// federated Newton, federated DPBoost and PFDS against a data user that
// mutates, replays and reorders everything it sends, and checks every
// honest owner's releases against its ledger (hostile.Check). Negative
// controls: the gate's memory off (the replay bug) and a charge removed (an
// uncharged value) must be found within the same seeds.
func TestHostileFuzz(t *testing.T) {
	n := *seeds
	if n == 0 {
		n = 20
		if testing.Short() {
			n = 4
		}
	}
	for _, sys := range fuzzSystems() {
		t.Run(sys.name, func(t *testing.T) {
			muts := map[string]int{}
			values, findings := 0, 0
			for s := *first; s < *first+n; s++ {
				rep, m, err := sys.run(uint64(s), "")
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range m {
					muts[k] += v
				}
				values += rep.Values
				for _, f := range rep.Findings {
					findings++
					if findings <= 20 {
						t.Errorf("seed %d: %v", s, f)
					}
				}
			}
			t.Logf("%d seeds: %d values seen, %d findings; mutations %v", n, values, findings, muts)
			if values == 0 {
				t.Fatal("no value observed: the fuzzer checks nothing")
			}
			for _, control := range sys.controls {
				found := 0
				for s := *first; s < *first+n && found == 0; s++ {
					rep, _, err := sys.run(uint64(s), control)
					if err != nil {
						t.Fatal(err)
					}
					found = len(rep.Findings)
				}
				if found == 0 {
					t.Errorf("negative control %q: %d seeds found nothing", control, n)
				}
			}
		})
	}
}

package fedboost_test

// Federated sessions on the simulator (protocol/simulate.RunFed): an
// external test package, since simulate imports fedboost; export_test.go
// lends it the package's test helpers and ledger keys.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/memnet"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/simulate"
)

// With noise off (np), the federated run equals the one-process trainer
// on the union of the owners' data: the same split (feature, bin) at every
// node of every tree, and leaves within the fixed-point tolerance. Each
// owner's cell is rounded to 1/S before it is summed, so a node's gradient
// sum is off by at most L/(2S) for L owners and a leaf by
// eta L/(2S)/(n + lambda) <= eta L/(2S lambda); predictions after T trees by
// T times that (splits could flip only at near-ties of the gains, which
// this fixed seed does not meet).
func TestNoNoiseEqualsOneProcessTrainer(t *testing.T) {
	const owners = 12
	union, parts := fedboost.TestData(t, 1200, owners)
	cfg := dpboost.DefaultConfig()
	cfg.Method, cfg.Trees, cfg.Depth, cfg.Bins, cfg.Lambda = dpboost.NP, 6, 3, 16, 1
	pub := fedboost.TestPublic(union, parts, cfg, 0, false)
	res, err := simulate.RunFed(simulate.FedOptions{Public: pub, Owners: parts, Seed: 1, Log: fedboost.TestLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	// The union in owner order (the order only changes float rounding).
	var X [][]float64
	var Y []int
	for _, p := range parts {
		X, Y = append(X, p.X...), append(Y, p.Y...)
	}
	all := &dataset.Dataset{Name: "union", X: X, Y: Y, Classes: union.Classes, Features: union.Features, Schema: union.Schema}
	want, err := dpboost.TrainClassifier(cfg, all, rng.ForName(t.Name()), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := res.Model
	S := math.Ldexp(1, field.DefaultScaleBits)
	tol := cfg.LearningRate * owners / (2 * S * cfg.Lambda) * float64(cfg.Trees)
	b := got.Binning()
	leafOf := func(tr dpboost.Tree, x []float64) int {
		n := 0
		for n < len(tr.Feature) {
			if b.Bin(tr.Feature[n], x[tr.Feature[n]]) <= tr.Bin[n] {
				n = 2*n + 1
			} else {
				n = 2*n + 2
			}
		}
		return n - len(tr.Feature)
	}
	renamed := 0
	for i, wt := range want.Boosters[0] {
		gt := got.Boosters[0][i]
		for n := range wt.Feature {
			if gt.Feature[n] != wt.Feature[n] || gt.Bin[n] != wt.Bin[n] {
				renamed++
			}
		}
		// The same partition of the union's rows at every node: every row
		// reaches the same leaf. (Two candidates that split a node's rows
		// identically tie exactly; which one wins depends on the last bit
		// of the float sums, so (feature, bin) may differ while the tree,
		// as a function on the data, does not.)
		for r, x := range all.X {
			if lg, lw := leafOf(gt, x), leafOf(wt, x); lg != lw {
				t.Fatalf("tree %d: row %d reaches leaf %d federated, %d one-process", i+1, r, lg, lw)
			}
		}
		for j := range wt.Leaf {
			if math.Abs(gt.Leaf[j]-wt.Leaf[j]) > tol {
				t.Fatalf("tree %d leaf %d: %.12g vs %.12g (tolerance %.2g)", i+1, j, gt.Leaf[j], wt.Leaf[j], tol)
			}
		}
	}
	t.Logf("%d of %d internal nodes chose another (feature, bin) with the same partition of the rows", renamed, cfg.Trees*(1<<cfg.Depth-1))
	if e1, e2 := got.Error(all), want.Error(all); math.Abs(e1-e2) > 1e-9 {
		t.Fatalf("training error %v federated, %v one-process", e1, e2)
	}
	// Every owner's predictions are the model's on its rows.
	for i, ow := range res.Owners {
		F := ow.Predictions()
		for r, x := range parts[i].X {
			if v := want.Value(x); math.Abs(F[r]-v) > tol {
				t.Fatalf("owner %d row %d: prediction %v, model %v", i, r, F[r], v)
			}
		}
		if ow.State() != fedboost.OwnerDone {
			t.Fatalf("owner %d in state %s", i, ow.State())
		}
	}
	t.Logf("%d trees, %.1f msgs and %.0f bytes per owner per tree, user %d msgs", len(res.Trees), res.MsgsPerOwnerTree, res.BytesPerOwnerTree, res.UserMsgs)
}

// A private run (dpboost with distributed noise) over disjoint owner
// groups: every owner takes part in exactly one tree per ensemble, its
// ledger records exactly one spend of eps_t per ensemble (under
// session/ensemble-k), and the model beats the majority class on its
// training data.
func TestPrivateRunSpendsOncePerEnsemble(t *testing.T) {
	const owners = 60
	union, parts := fedboost.TestData(t, 6000, owners)
	cfg := dpboost.DefaultConfig()
	cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Bins, cfg.Lambda, cfg.Epsilon, cfg.ClipGradients = 6, 3, 2, 8, 20, 12, true
	for _, columns := range []int{1, 0} {
		t.Run(fmt.Sprintf("columns=%d", columns), func(t *testing.T) {
			pub := fedboost.TestPublic(union, parts, cfg, columns, true)
			res, err := simulate.RunFed(simulate.FedOptions{Public: pub, Owners: parts, Seed: 2, Log: fedboost.TestLog(t)})
			if err != nil {
				t.Fatal(err)
			}
			member := make([]int, owners) // trees each owner contributed to
			full := pub
			full.Session = fmt.Sprintf("fed-%016x", 2)
			full.Beacon = []byte("beacon-2")
			for i := range owners {
				full.Roster = append(full.Roster, simulate.OwnerID(i))
			}
			for tr := 1; tr <= cfg.Trees; tr++ {
				for _, id := range full.Group(tr) {
					var i int
					fmt.Sscanf(string(id), "owner-%d", &i)
					member[i]++
				}
			}
			epsT := dpboost.Account(cfg).PerTree[0]
			for i, led := range res.Ledgers {
				if member[i] != cfg.Ensembles() {
					t.Fatalf("owner %d is in %d groups, want one per ensemble (%d)", i, member[i], cfg.Ensembles())
				}
				if s := led.Spent(); math.Abs(s-float64(cfg.Ensembles())*epsT) > 1e-9 {
					t.Fatalf("owner %d spent %v, want %d x %v", i, s, cfg.Ensembles(), epsT)
				}
				for e := range cfg.Ensembles() {
					if !led.Contributed(fedboost.LedgerKey(full.Session, e)) {
						t.Fatalf("owner %d: no ledger record for ensemble %d", i, e)
					}
				}
			}
			if e := res.Model.Error(union); e > 0.4 {
				t.Fatalf("training error %v", e)
			}
			t.Logf("error %.3f, %.1f msgs, %.0f bytes per owner per tree", res.Model.Error(union), res.MsgsPerOwnerTree, res.BytesPerOwnerTree)
		})
	}
}

// An owner whose ledger already records the charge of an ensemble of
// this session (it was charged before a restart, and crashed before it
// bound or dealt anything) deals that ensemble's sums under the charge it
// already holds: its ledger does not grow for it, and every value it
// deals is named by the gate (one value per name).
func TestRestartedOwnerDealsUnderItsCharge(t *testing.T) {
	const owners, victim = 60, 7
	union, parts, cfg := fedboost.PrivateSetup(t, owners)
	pub := fedboost.TestPublic(union, parts, cfg, 2, true)
	session := fmt.Sprintf("fed-%016x", 3)
	epsT := dpboost.Account(cfg).PerTree[0]
	res, err := simulate.RunFed(simulate.FedOptions{Public: pub, Owners: parts, Seed: 3, Log: fedboost.TestLog(t),
		Ledger: func(i int) *protocol.MemLedger {
			l := protocol.NewMemLedger(1e9)
			if i == victim {
				if err := l.Spend(fedboost.LedgerKey(session, 0), 1, 0, epsT); err != nil {
					t.Fatal(err)
				}
			}
			return l
		}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Owners[victim].Stats().Get("budget"); got != 0 {
		t.Fatalf("the owner refused %d requests under a charge it holds", got)
	}
	// Its earlier charge plus ensemble 1's: nothing new for ensemble 0.
	if s := res.Ledgers[victim].Spent(); math.Abs(s-2*epsT) > 1e-9 {
		t.Fatalf("owner spent %v, want %v", s, 2*epsT)
	}
	if res.Model == nil {
		t.Fatal("no model")
	}
}

// Owners that fall silent before the session starts: within the drop
// fraction every sum completes over the others; beyond it the dealer floor
// is not met, the user fails with ErrTooFew, publishes Abort, and the
// owners go back to idle. Nothing is revealed over fewer than m_t dealers.
func TestSilentOwners(t *testing.T) {
	const owners = 60
	union, parts, cfg := fedboost.PrivateSetup(t, owners)
	pub := fedboost.TestPublic(union, parts, cfg, 2, true)
	for _, c := range []struct {
		name   string
		killed int
		fails  bool
	}{{"within drop fraction", 3, false}, {"beyond", 24, true}} {
		t.Run(c.name, func(t *testing.T) {
			var killed []protocol.PeerID
			res, err := simulate.RunFed(simulate.FedOptions{Public: pub, Owners: parts, Seed: 4, Log: fedboost.TestLog(t),
				Setup: func(n *memnet.Network, _ protocol.PeerID, ids []protocol.PeerID) {
					for i := 0; i < c.killed; i++ {
						id := ids[(i*7)%len(ids)]
						n.Kill(id)
						killed = append(killed, id)
					}
				}})
			// Every live owner logs the data user's outcome, in its words.
			want := protocol.OutcomeComplete
			if c.fails {
				want = protocol.OutcomeFailed
			}
			if res.Outcome.Kind != want {
				t.Fatalf("user outcome %q, want %s", res.Outcome, want)
			}
			for i, o := range res.OwnerOutcomes {
				if dead := slices.Contains(killed, simulate.OwnerID(i)); (o == protocol.Outcome{}) != dead || (!dead && o.String() != res.Outcome.String()) {
					t.Fatalf("owner %d (killed %v): outcome %q, user %q", i, dead, o, res.Outcome)
				}
			}
			if !c.fails {
				if err != nil || res.Model == nil {
					t.Fatalf("with %d silent owners: %v", c.killed, err)
				}
				if got := res.Outcome.String(); got != fmt.Sprintf("complete: %d of %d trees", pub.Boost.Trees, pub.Boost.Trees) {
					t.Fatalf("outcome %q", got)
				}
				return
			}
			if !errors.Is(err, securesum.ErrTooFew) {
				t.Fatalf("with %d of %d owners silent: err %v, want ErrTooFew", c.killed, owners, err)
			}
			for i, ow := range res.Owners {
				if st := ow.State(); st == fedboost.OwnerJoined && !slices.Contains(killed, simulate.OwnerID(i)) {
					t.Fatalf("owner %d still joined after the abort", i)
				}
			}
		})
	}
}

// An owner that misses the FedConfig and the first trees (every message
// from the user to it is lost until tree 2 is complete) catches up: the
// user re-announces the configuration and re-publishes every complete tree
// at each tree start, the owner joins, applies them in order and takes part
// from tree 3 on. At the end its predictions are the model's on its rows,
// like every other owner's. (Without the re-published trees it would wait
// for tree 1 forever and its predictions would stay 0.)
func TestLateOwnerCatchesUp(t *testing.T) {
	const owners = 12
	union, parts := fedboost.TestData(t, 1200, owners)
	cfg := dpboost.DefaultConfig()
	cfg.Method, cfg.Trees, cfg.Depth, cfg.Bins, cfg.Lambda = dpboost.NP, 5, 3, 16, 1
	pub := fedboost.TestPublic(union, parts, cfg, 0, false)
	late := 5
	var net *memnet.Network
	healed := false
	res, err := simulate.RunFed(simulate.FedOptions{Public: pub, Owners: parts, Seed: 1, Log: fedboost.TestLog(t),
		Setup: func(n *memnet.Network, user protocol.PeerID, ids []protocol.PeerID) {
			net = n
			n.SetLink(user, ids[late], memnet.LinkParams{Delay: time.Millisecond, DropRate: 1})
		},
		OnTree: func(r fedboost.TreeReport) {
			if r.Tree == 2 {
				net.ResetLink(simulate.UserID, simulate.OwnerID(late))
				healed = true
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !healed {
		t.Fatal("tree 2 never completed: the late owner was never let in")
	}
	m := res.Model
	tol := 1e-6
	for i, ow := range res.Owners {
		F := ow.Predictions()
		for r, x := range parts[i].X {
			if v := m.Value(x); math.Abs(F[r]-v) > tol {
				t.Fatalf("owner %d (late: %v) row %d: prediction %v, model %v", i, i == late, r, F[r], v)
			}
		}
		if ow.State() != fedboost.OwnerDone {
			t.Fatalf("owner %d in state %s", i, ow.State())
		}
	}
}

// A private Newton session over 24 owners: every owner is charged the
// design's eps exactly once (one ledger key for the session, before its
// first share), the model's account states it, and the model learns (its
// training error within 0.05 of the one-process Newton trainer's on the
// union at the same eps; both are noisy, the margin is about 5 sds of the
// difference over this seed's run).
func TestNewtonFederatedSession(t *testing.T) {
	const owners = 24
	union, parts := fedboost.TestData(t, 6000, owners)
	cfg := fedboost.NewtonTestConfig(4, 12)
	pub := fedboost.TestPublic(union, parts, cfg, 0, true)
	res, err := simulate.RunFed(simulate.FedOptions{Public: pub, Owners: parts, Seed: 3, Log: fedboost.TestLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	full := pub
	full.Session = fmt.Sprintf("fed-%016x", 3)
	d, err := full.NewtonDesign()
	if err != nil {
		t.Fatal(err)
	}
	for i, led := range res.Ledgers {
		if s := led.Spent(); math.Abs(s-d.Eps) > 1e-9 {
			t.Fatalf("owner %d spent %v, want the design's %v", i, s, d.Eps)
		}
		if !led.Contributed(fedboost.NewtonLedgerKey(full.Session)) {
			t.Fatalf("owner %d: no ledger record", i)
		}
	}
	if res.Model.Account.Newton == nil || math.Abs(res.Model.Account.Total-d.Eps) > 1e-12 {
		t.Fatalf("model account %+v", res.Model.Account)
	}
	one, err := dpboost.TrainClassifier(cfg, union, rng.Seeded(5), nil)
	if err != nil {
		t.Fatal(err)
	}
	fe, oe := res.Model.Error(union), one.Error(union)
	if fe > oe+0.05 || fe > 0.3 {
		t.Fatalf("federated training error %.3f, one-process %.3f", fe, oe)
	}
	t.Logf("federated %.3f, one-process %.3f, eps %.4g, tau %.4g (%.3g decoded), %.1f msgs and %.0f bytes per owner per tree",
		fe, oe, d.Eps, d.Tau, d.Tau/math.Ldexp(1, int(pub.Sum.ScaleBits)), res.MsgsPerOwnerTree, res.BytesPerOwnerTree)
}

// What the data user sees is the exact aggregate plus the designed noise:
// the root histograms' count cells of every tree (exact counts are known:
// the group's rows per bin) minus the exact counts have mean 0 and the
// variance of the sum of |G_t| shares sized for h_t = m_t - c at the root's
// budget. Tolerances: the sample mean has sd sigma/sqrt(n); the sample
// variance sd sigma^2 sqrt((2 + ex)/n) with ex <= 3 h/k + small (the excess
// kurtosis of NB(k/h) - NB(k/h), see crypto/dpnoise); both within 5 sd.
// Negative control: the same residuals are rejected as the noise of a
// design sized for one honest owner.
func TestUserSeesDesignedNoise(t *testing.T) {
	const owners = 60
	union, parts, cfg := fedboost.PrivateSetup(t, owners)
	cfg.Trees, cfg.EnsembleSize = 12, 3
	cfg.Epsilon = 30
	pub := fedboost.TestPublic(union, parts, cfg, 0, true)
	roots := map[int][]float64{}
	res, err := simulate.RunFed(simulate.FedOptions{Public: pub, Owners: parts, Seed: 5, Log: fedboost.TestLog(t),
		OnSum: func(tree, node int, v []float64) {
			if node == 0 {
				roots[tree] = v
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	full := pub
	full.Session, full.Beacon = res.Session, []byte(fmt.Sprintf("beacon-%d", 5))
	for i := range owners {
		full.Roster = append(full.Roster, simulate.OwnerID(i))
	}
	b, _ := full.Binning()
	S := math.Ldexp(1, field.DefaultScaleBits)
	var z []float64 // residual / expected sd
	var wantVar float64
	for tr := 1; tr <= cfg.Trees; tr++ {
		v, ok := roots[tr]
		if !ok {
			t.Fatalf("no root sum for tree %d", tr)
		}
		C := len(v) / 2
		exact := make([]float64, C)
		group := full.Group(tr)
		for i, p := range parts {
			if !slices.Contains(group, simulate.OwnerID(i)) {
				continue
			}
			data, _ := b.Quantize(p.X)
			for r := range data.Rows {
				row := data.Idx[r*data.Features : (r+1)*data.Features]
				fedboost.AddRootCounts(full.Schema, b, row, exact)
			}
		}
		np, _, err := full.NoiseFor(tr, full.NodeLayout(b, tr, 0))
		if err != nil {
			t.Fatal(err)
		}
		want := np.SumVariance(len(group)) / (S * S)
		wantVar = want
		for i := range exact {
			z = append(z, (v[C+i]-exact[i])/math.Sqrt(want))
		}
	}
	n := float64(len(z))
	mean, v := meanVar(z)
	if math.Abs(mean) > 5/math.Sqrt(n) {
		t.Fatalf("residual mean %.3f sd, want 0 +- %.3f", mean, 5/math.Sqrt(n))
	}
	if tol := 5 * math.Sqrt((2+3.5)/n); math.Abs(v-1) > tol {
		t.Fatalf("residual variance %.3f of the design's, want 1 +- %.3f", v, tol)
	}
	// Negative control: measured against shares sized for one honest
	// owner (h = 1: h_t times more variance expected), the same residuals
	// are rejected.
	h := float64(full.Honest(1))
	if vw := v / h; math.Abs(vw-1) <= 5*math.Sqrt((2+3.5)/n) {
		t.Fatalf("a design sized for one honest owner is accepted (variance ratio %.3f)", vw)
	}
	t.Logf("%d root count cells: residual mean %.3f sd, variance %.3f of the design's (cell sd %.3g, h_1 = %v)", len(z), mean, v, math.Sqrt(wantVar), h)
}

// meanVar is the mean and the sample variance of z (the residual checks of
// the noise tests).
func meanVar(z []float64) (mean, variance float64) {
	n := float64(len(z))
	for _, x := range z {
		mean += x
	}
	mean /= n
	for _, x := range z {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / (n - 1)
}

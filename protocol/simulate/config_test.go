package simulate

import (
	"strings"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol/session"
)

// newPlan, table-tested: defaults, what the options override, and the
// options it refuses (each error names the option).
func TestNewPlan(t *testing.T) {
	data := boost.Data{Owners: make([]*dataset.Dataset, 3)}
	cfg := boost.DefaultConfig()
	cfg.Seed = 0x2a
	timing := session.Timing{AnnounceInterval: time.Second, JoinTimeout: time.Hour, ShareTimeout: time.Minute, IdleTimeout: time.Hour}
	for _, c := range []struct {
		name    string
		opts    Options
		err     string // substring of the error; "" for none
		delay   time.Duration
		maxVirt time.Duration
		timing  session.Timing
	}{
		{name: "defaults", opts: Options{Boost: cfg, Data: data},
			delay: time.Millisecond, maxVirt: 24 * time.Hour, timing: defaultTiming},
		{name: "overrides", opts: Options{Boost: cfg, Data: data, Delay: 50 * time.Millisecond, MaxVirtual: time.Hour, Timing: timing},
			delay: 50 * time.Millisecond, maxVirt: time.Hour, timing: timing},
		{name: "partial timing replaces the default whole", opts: Options{Boost: cfg, Data: data, Timing: session.Timing{ShareTimeout: time.Second}},
			delay: time.Millisecond, maxVirt: 24 * time.Hour, timing: session.Timing{ShareTimeout: time.Second}},
		{name: "no owners", opts: Options{Boost: cfg}, err: "no owners"},
		{name: "negative delay", opts: Options{Boost: cfg, Data: data, Delay: -1}, err: "negative Delay"},
		{name: "drop rate", opts: Options{Boost: cfg, Data: data, DropRate: 1.5}, err: "DropRate 1.5"},
		{name: "silent", opts: Options{Boost: cfg, Data: data, SilentPerRound: -1}, err: "SilentPerRound -1"},
		{name: "fault owner", opts: Options{Boost: cfg, Data: data, Faults: []Fault{{Kind: KillUser}, {Kind: PauseOwner, Owner: 3}}},
			err: "fault 1: owner 3 outside [0, 3)"},
		{name: "fault kind", opts: Options{Boost: cfg, Data: data, Faults: []Fault{{Kind: 9}}}, err: "fault 0: unknown kind 9"},
		{name: "user faults need no owner", opts: Options{Boost: cfg, Data: data, Faults: []Fault{{Kind: RestartUser, Owner: -1}}},
			delay: time.Millisecond, maxVirt: 24 * time.Hour, timing: defaultTiming},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := newPlan(c.opts)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.opts.Delay != c.delay || p.net.Delay != c.delay || p.opts.MaxVirtual != c.maxVirt || p.timing != c.timing {
				t.Fatalf("delay %v (net %v), max virtual %v, timing %+v", p.opts.Delay, p.net.Delay, p.opts.MaxVirtual, p.timing)
			}
			if p.opts.Log == nil || p.net.Seed != cfg.Seed || !p.net.Deterministic {
				t.Fatalf("log %v, net %+v", p.opts.Log, p.net)
			}
			if p.session != "sim-000000000000002a" || p.leaveWait() != c.timing.IdleTimeout+time.Minute {
				t.Fatalf("session %q, leave wait %v", p.session, p.leaveWait())
			}
			if ids := p.ownerIDs(); len(ids) != 3 || ids[2] != "owner-000002" {
				t.Fatalf("owner ids %v", ids)
			}
		})
	}
}

// The owners' and the user's configurations: what each takes from the
// options (epsilon cap, none baselines, colluders, the seeded streams).
func TestPlanRoles(t *testing.T) {
	data := boost.Data{Owners: make([]*dataset.Dataset, 2), User: &dataset.Dataset{}, Test: &dataset.Dataset{}}
	for _, c := range []struct {
		name      string
		mech      string
		eps, err  float64
		colluders int
		maxEps    float64
		none      bool
	}{
		{"pm", "pm", 5, 1, 2, 5, false},
		{"err eps above eps", "pm", 0.5, 3, 0, 3, false},
		{"at least 1", "hm", 0.2, 0.1, 0, 1, false},
		{"none baseline", "none", 1, 0, 0, 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := boost.DefaultConfig()
			cfg.Mechanism, cfg.Epsilon, cfg.ErrEpsilon, cfg.Seed = c.mech, c.eps, c.err, 9
			p, err := newPlan(Options{Boost: cfg, Data: data, OwnerColluders: c.colluders})
			if err != nil {
				t.Fatal(err)
			}
			o := p.owner(1)
			if o.User != UserID || o.Data != data.Owners[1] || o.MaxEpsilon != c.maxEps || o.AllowNone != c.none ||
				o.NoneCharge != 1 || o.Colluders != c.colluders || o.Share != nil || o.Ledger != nil {
				t.Fatalf("owner config %+v", o)
			}
			// The owners' streams are boost.Train's (owner index 1).
			if got, want := o.Noise(2, 1).Uint64(), boost.NoiseStream(9, 2, 1, 1).Uint64(); got != want {
				t.Fatal("owner noise stream is not boost.NoiseStream")
			}
			if a, b := p.owner(0).NonceRand.Uint64(), p.owner(1).NonceRand.Uint64(); a == b {
				t.Fatal("two owners draw the same nonces")
			}
			u := p.user(0, nil)
			if u.Session != p.session || u.ExpectedOwners != 2 || u.Own != data.User || u.Test != data.Test || u.Timing != p.timing || u.Resume != nil {
				t.Fatalf("user config %+v", u)
			}
			ck := &session.Checkpoint{}
			if r := p.user(1, ck); r.Resume != ck || r.SumRand.Uint64() == p.user(0, nil).SumRand.Uint64() {
				t.Fatal("a restarted user does not resume, or draws its first incarnation's masks")
			}
		})
	}
}

package simulate

import (
	"reflect"
	"strings"
	"testing"

	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol/pfds"
)

func pfdsWorld(t *testing.T, agents int) (*dataset.Dataset, *bp.Domain, []bp.Local, bp.Params) {
	t.Helper()
	d, err := dataset.Adult()
	if err != nil {
		t.Fatal(err)
	}
	d, _ = d.Shuffle(5).Split(900)
	dom, err := bp.NewDomain(d)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := bp.NonIID(dom, d.X, agents, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	var locals []bp.Local
	for _, idx := range parts {
		var l bp.Local
		for _, k := range idx {
			l.X, l.Y = append(l.X, d.X[k]), append(l.Y, d.Y[k])
		}
		locals = append(locals, l)
	}
	p := bp.DefaultParams()
	p.HMax, p.MaxLeaves = 4, 64
	return d, dom, locals, p
}

// RunPFDS plays the real agents over memnet: every agent ends done holding
// exactly the one-process oracle's shares (boost/pfds.Simulate with the same
// seed). With an agent killed, the others still finish without its shares.
// Bad options are refused with the option named.
func TestRunPFDSEqualsOracle(t *testing.T) {
	const agents, seed = 4, 9
	d, dom, locals, p := pfdsWorld(t, agents)
	ref, err := bp.Simulate(dom, locals, p, bp.Full, seed)
	if err != nil {
		t.Fatal(err)
	}
	opts := PFDSOptions{Domain: dom, Schema: d.Schema.Digest(), Agents: locals, Params: p, Learner: bp.LogReg, Seed: seed}
	as, virt, err := RunPFDS(opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range as {
		if a.State() != pfds.StateDone || !reflect.DeepEqual(a.DataShares(), dataOf(ref)) {
			t.Fatalf("agent %d in %s, its data shares equal the oracle's: %v", i, a.State(), reflect.DeepEqual(a.DataShares(), dataOf(ref)))
		}
	}
	if virt <= 0 {
		t.Fatalf("virtual time %v", virt)
	}

	opts.Kill = []int{1}
	as, _, err = RunPFDS(opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range as {
		if i != 1 && (a.State() != pfds.StateDone || len(a.Shares()) != agents-1) {
			t.Fatalf("agent %d in %s with %d shares, want done with %d", i, a.State(), len(a.Shares()), agents-1)
		}
	}

	opts.Kill = []int{agents}
	if _, _, err := RunPFDS(opts); err == nil || !strings.Contains(err.Error(), "Kill names agent 4 of 4") {
		t.Fatalf("out-of-range Kill: %v", err)
	}
}

func dataOf(s []bp.Shared) []*bp.DataShare {
	out := make([]*bp.DataShare, len(s))
	for i := range s {
		out[i] = s[i].Data
	}
	return out
}

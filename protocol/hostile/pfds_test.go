package hostile_test

import (
	"fmt"
	"math/rand/v2"

	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/hostile"
	"github.com/ppboost/ppboost/protocol/pfds"
	"github.com/ppboost/ppboost/protocol/simulate"
)

func init() {
	hostile.PFDSHeader = func(data []byte) (string, string, bool) {
		h, err := pfds.DecodeHeader(data)
		if err != nil {
			return "", "", false
		}
		switch h.Kind {
		case pfds.KindTree:
			return h.Session, "tree", true
		case pfds.KindData:
			return h.Session, "data", true
		}
		return "", "", false
	}
}

// pfdsWorld is a small PFDS world: Adult rows cut among agents.
func pfdsWorld(agents int) (*dataset.Dataset, *bp.Domain, []bp.Local, bp.Params, error) {
	d, err := dataset.Adult()
	if err != nil {
		return nil, nil, nil, bp.Params{}, err
	}
	d, _ = d.Shuffle(5).Split(150 * agents)
	dom, err := bp.NewDomain(d)
	if err != nil {
		return nil, nil, nil, bp.Params{}, err
	}
	parts, err := bp.NonIID(dom, d.X, agents, 0, 5)
	if err != nil {
		return nil, nil, nil, bp.Params{}, err
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
	p.HMax, p.MaxLeaves = 3, 32
	return d, dom, locals, p, nil
}

// mutateAnnounce is the PFDS announcer's deviations: the same session
// announced again, another session id, another epsilon, a roster without
// one agent or reordered, other timeouts.
func mutateAnnounce(data []byte, r *rand.Rand) ([]byte, string) {
	h, a, err := pfds.DecodeAnnounce(data)
	if err != nil {
		return nil, ""
	}
	b := *a
	b.Roster = append([]protocol.PeerID(nil), a.Roster...)
	kind := "re-announced"
	switch r.IntN(5) {
	case 0:
		b.Session += []string{"x", " ", "/0"}[r.IntN(3)]
		kind = "session"
	case 1:
		b.Params.Eps *= 1 + r.Float64()
		if b.CV != nil {
			cv := *b.CV
			cv.Eps = b.Params.Eps
			b.CV = &cv
		}
		kind = "epsilon"
	case 2:
		if len(b.Roster) > 2 {
			i := r.IntN(len(b.Roster))
			b.Roster = append(b.Roster[:i], b.Roster[i+1:]...)
		}
		kind = "roster"
	case 3:
		r.Shuffle(len(b.Roster), func(i, j int) { b.Roster[i], b.Roster[j] = b.Roster[j], b.Roster[i] })
		b.TreeTimeout, b.DataTimeout = b.TreeTimeout/2+1, b.DataTimeout*2
		kind = "roster order and timeouts"
	}
	return pfds.EncodeAnnounce(h.Author, &b), kind
}

// runPFDS plays one PFDS session against a hostile announcer and checks
// every agent's tree and data share against its ledger. control
// "uncharged" removes one agent's charge after the run ("forget" does not
// apply: an agent's values are made once per charge, from its Rand).
func runPFDS(seed uint64, agents int, rate float64, control string) (hostile.Report, map[string]int, error) {
	d, dom, locals, p, err := pfdsWorld(agents)
	if err != nil {
		return hostile.Report{}, nil, err
	}
	var honest []protocol.PeerID
	for i := range agents {
		honest = append(honest, simulate.AgentID(i))
	}
	// Odd seeds play PFDS-cv sessions (published leaf counts), even ones
	// the paper's PFDS.
	var cv *bp.VariantParams
	if seed%2 == 1 {
		v := bp.DefaultVariant()
		v.Eps, v.HMax, v.MaxLeaves = p.Eps, p.HMax, p.MaxLeaves
		cv = &v
	}
	adv := hostile.New(seed, simulate.AnnouncerID, honest, rate)
	adv.Mutate = mutateAnnounce
	ledgers := make([]*protocol.MemLedger, agents)
	_, _, _ = simulate.RunPFDS(simulate.PFDSOptions{Domain: dom, Schema: d.Schema.Digest(), Agents: locals, Params: p,
		CV: cv, Learner: bp.LogReg, Seed: seed, Tap: adv.Tap,
		Ledger: func(i int) *protocol.MemLedger {
			ledgers[i] = protocol.NewMemLedger(3 * p.Eps) // room for two sessions' deviations beyond the real one
			return ledgers[i]
		}})
	session := fmt.Sprintf("sim-%d", seed)
	led := map[protocol.PeerID]hostile.Ledger{}
	for i, l := range ledgers {
		if l == nil {
			return hostile.Report{}, nil, fmt.Errorf("seed %d: agent %d has no ledger", seed, i)
		}
		led[simulate.AgentID(i)] = l
	}
	if control == "uncharged" {
		ledgers[0].Forget(session)
	}
	rep := hostile.Check(adv.Obs, led, func(s hostile.Slot) (string, float64, bool) {
		if s.Kind != "pfds" {
			return "", 0, false
		}
		return s.Session, led[s.Owner].(*protocol.MemLedger).KeySpent(s.Session), true
	})
	return rep, adv.Mutations(), nil
}

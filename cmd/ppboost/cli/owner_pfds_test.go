package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
	"github.com/ppboost/ppboost/protocol/pfds"
)

// The owner's PFDS role (owner --pfds) on the in-memory network: three
// owners with --stay each serve two announcements in a row with a fresh
// agent each (each ends complete, charges the announcement's session once
// in the owner's ledger and rewrites --pfds-model), then refuse a third
// whose eps is over their --pfds-eps (exit status 4, nothing charged).
func TestPFDSRoleSessionsPerAnnouncement(t *testing.T) {
	const owners = 3
	cfg := dataset.DefaultSynthetic(120, rng.SeedOf(t.Name()))
	cfg.Features, cfg.Informative, cfg.Redundant = 4, 3, 1
	d, err := dataset.Synthetic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d.Schema = d.IdentitySchema()
	parts, err := d.Partition(owners, nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	net := memnet.New(memnet.Options{Seed: 1})
	t.Cleanup(func() { net.Close() })
	const annID = protocol.PeerID("announcer")
	ann, err := net.Join(annID)
	if err != nil {
		t.Fatal(err)
	}
	if err := ann.Join(pfds.Topic); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ends := make(chan roleEnd, 16)
	var roster []protocol.PeerID
	ledgers := make([]*protocol.MemLedger, owners)
	for i := range owners {
		id := protocol.PeerID(fmt.Sprintf("owner-%d", i))
		roster = append(roster, id)
		ep, err := net.Join(id)
		if err != nil {
			t.Fatal(err)
		}
		ledgers[i] = protocol.NewMemLedger(10)
		opt := pfdsOwner{announcer: annID, maxEps: 2, lambda: 1e-3, model: filepath.Join(dir, fmt.Sprintf("pfds-%d.json", i))}
		r, err := startPFDS(ep, opt, parts[i], ledgers[i], nil, node.NewMetrics(), true, ends, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.close)
	}
	announce := func(session string, eps float64) {
		p := bp.DefaultParams()
		p.Eps, p.HMax = eps, 4
		msg := pfds.EncodeAnnounce(annID, &pfds.Announce{Session: session, Params: p, Learner: bp.LogReg,
			SchemaDigest: d.Schema.Digest(), Roster: roster, TreeTimeout: 20000, DataTimeout: 20000})
		if err := ann.Publish(context.Background(), pfds.Topic, msg); err != nil {
			t.Fatal(err)
		}
	}
	collect := func(what string) []roleEnd {
		var got []roleEnd
		for len(got) < owners {
			select {
			case e := <-ends:
				got = append(got, e)
			case <-time.After(time.Minute):
				t.Fatalf("%s: %d of %d owners ended", what, len(got), owners)
			}
		}
		return got
	}
	for s, session := range []string{"pfds-one", "pfds-two"} {
		// Each role reports a session's end once its next agent listens.
		announce(session, 1)
		for _, e := range collect(session) {
			if e.name != "pfds" || e.err != nil {
				t.Fatalf("%s: role %s ended with %v", session, e.name, e.err)
			}
		}
		for i, l := range ledgers {
			if got, want := l.Spent(), float64(s+1); got < want-1e-9 || got > want+1e-9 {
				t.Fatalf("%s: owner %d spent %v, want %v", session, i, got, want)
			}
			f, err := os.Open(filepath.Join(dir, fmt.Sprintf("pfds-%d.json", i)))
			if err != nil {
				t.Fatal(err)
			}
			m, err := bp.ReadModelFile(f, f.Name())
			f.Close()
			if err != nil || m.Agent != i {
				t.Fatalf("%s: owner %d's predictor: %v (agent %v)", session, i, err, m)
			}
		}
	}
	announce("pfds-greedy", 3)
	for _, e := range collect("pfds-greedy") {
		if code := exitCode(e.err); code != exitRefused {
			t.Fatalf("a session over --pfds-eps ended with %v (exit %d), want exit %d", e.err, code, exitRefused)
		}
	}
	for i, l := range ledgers {
		if l.Spent() > 2+1e-9 {
			t.Fatalf("owner %d spent %v on a refused session", i, l.Spent())
		}
	}
}

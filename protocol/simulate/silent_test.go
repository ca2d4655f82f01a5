package simulate

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
	"github.com/ppboost/ppboost/protocol/wire"
)

// silentJoiners adds n outsider endpoints to the network that read the
// user's first Announce, Join at once and then never answer anything.
func silentJoiners(t *testing.T, net *memnet.Network, user protocol.PeerID, n int) {
	for i := 0; i < n; i++ {
		ep, err := net.Join(protocol.PeerID(fmt.Sprintf("outsider-%02d", i)))
		if err != nil {
			t.Fatal(err)
		}
		joined := false
		ep.SetHandler(func(m protocol.Message) {
			env, err := wire.Unmarshal(m.Data, wire.MaxControlBytes)
			if err != nil || m.From != user || env.GetAnnounce() == nil || joined {
				return // LiveCheck, Select, Roster, ...: never answered
			}
			joined = true
			b, err := wire.Marshal(&wire.Envelope{Header: &wire.Header{Version: wire.Version, Session: env.GetHeader().GetSession(), Seq: 1},
				Body: &wire.Envelope_Join{Join: &wire.Join{SchemaDigest: env.GetAnnounce().GetConfig().GetSchemaDigest(),
					Nonce: make([]byte, session.NonceBytes)}}}, wire.MaxControlBytes)
			if err != nil {
				t.Error(err)
				return
			}
			ep.Send(context.Background(), user, wire.ProtoSession, b)
		})
		if err := ep.Join(wire.TopicControl); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSilentJoinersOnMemnet is issue 31 item 4 on memnet in virtual time,
// through the simulator's real owners: 20 outsider endpoints Join an open
// session at its first Announce and never answer; the 5 owners are cut off
// from the user for the first 4 s (a partition that heals), so the outsiders
// are the whole first roster. The owners join after the start, echo the
// user's liveness check, enter roster version 2 and the session trains.
func TestSilentJoinersOnMemnet(t *testing.T) {
	cfg := boost.DefaultConfig()
	cfg.Learner, cfg.Mechanism, cfg.Alpha = boost.Stump, "none", boost.AlphaValidation
	cfg.OwnersPerRound, cfg.Rounds, cfg.MaxAttempts, cfg.Seed = 1, 2, 10, 31
	data, err := boost.Prepare(boost.DataSpec{Source: "synthetic", Owners: 5, SamplesPerOwner: 40,
		UserSamples: 300, TestSamples: 300, Seed: cfg.Seed}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(Options{Boost: cfg, Sum: securesum.DefaultParams(), Data: data,
		Timing: session.Timing{AnnounceInterval: 100 * time.Millisecond, JoinTimeout: time.Minute, ShareTimeout: 2 * time.Second,
			IdleTimeout: 10 * time.Minute},
		Setup: func(net *memnet.Network, user protocol.PeerID, owners []protocol.PeerID) {
			silentJoiners(t, net, user, 20)
			group := []protocol.PeerID{user}
			for i := 0; i < 20; i++ {
				group = append(group, protocol.PeerID(fmt.Sprintf("outsider-%02d", i)))
			}
			net.Partition(group, owners)
			net.Clock().AfterFunc(4*time.Second, net.Heal)
		}})
	if err != nil {
		t.Fatalf("session failed: %v", err)
	}
	silent := 0
	for _, r := range res.Rounds {
		t.Logf("round %d attempt %d: %d/%d owners answered, accepted %v", r.Round, r.Attempt, r.Answered, r.Selected, r.Accepted)
		if r.Answered == 0 {
			silent++
		}
	}
	if len(res.Model.Rounds) != cfg.Rounds {
		t.Fatalf("model of %d rounds, want %d", len(res.Model.Rounds), cfg.Rounds)
	}
	if silent > 2 {
		t.Errorf("%d attempts without an answer, want at most the 2 that began before the owners could join", silent)
	}
	t.Logf("trained in %v of virtual time; %d attempts without an answer; owners' outcomes %s", res.Virtual, silent,
		strings.Join(outcomes(res), ", "))
}

func outcomes(res *Result) []string {
	var out []string
	for _, o := range res.OwnerOutcomes {
		out = append(out, o.String())
	}
	return out
}

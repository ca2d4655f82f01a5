package store

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
	"github.com/ppboost/ppboost/protocol/session"
	"github.com/ppboost/ppboost/protocol/wire"
)

// TestRestartedOwnerNeverContributesTwice: an owner releases its share, its
// process dies, a new owner process opens the same ledger file, and the data
// user selects it again in the same session: it refuses.
func TestRestartedOwnerNeverContributesTwice(t *testing.T) {
	d, err := dataset.Synthetic(dataset.DefaultSynthetic(40, 1))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	net := memnet.New(memnet.Options{Deterministic: true, Delay: time.Millisecond})
	defer net.Close()
	userEP, _ := net.Join("user")
	var mu sync.Mutex
	shares, refusals := 0, 0
	userEP.SetHandler(func(m protocol.Message) {
		env, err := wire.Unmarshal(m.Data, wire.MaxControlBytes)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if env.GetShare() != nil {
			shares++
		}
		if env.GetRefuse() != nil {
			refusals++
		}
	})
	userEP.Join(wire.TopicShares)
	var seq uint64
	publish := func(ep *memnet.Endpoint, round uint32, body *wire.Envelope) {
		seq++
		body.Header = &wire.Header{Version: wire.Version, Session: "s", Round: round, Seq: seq}
		b, _ := wire.Marshal(body, wire.MaxControlBytes)
		ep.Publish(context.Background(), wire.TopicControl, b)
	}
	announce := &wire.Envelope{Body: &wire.Envelope_Announce{Announce: &wire.Announce{Config: &wire.SessionConfig{
		Learner: "stump", Mechanism: "pm", Epsilon: 1, Rounds: 3, OwnersPerRound: 1, Classes: 2, Features: 20,
		Thresholds: make([]float64, 20), AlphaMode: "validation", SumMethod: "ring", SumCommittee: 1, ScaleBits: 24,
		MinParties: 3, SchemaDigest: schemaOf(d)}}}}
	selectMe := func() *wire.Envelope {
		return &wire.Envelope{Body: &wire.Envelope_Select{Select: &wire.Select{Selected: []string{"owner"}, RosterVersion: 1}}}
	}
	start := func(name string) *FileLedger {
		ep, err := net.Join(protocol.PeerID(name))
		if err != nil {
			t.Fatal(err)
		}
		led, err := OpenLedger(path, 5, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		// NewOwner, not session.StartOwner: the restarted process keeps
		// its peer id "owner" on an endpoint of another name (memnet ids
		// are unique), which StartOwner (self = the transport's ID) cannot.
		o, err := session.NewOwner("owner", protocol.Direct{Tr: ep, Log: hclog.NewNullLogger()},
			session.OwnerConfig{User: "user", Data: d, Ledger: led, MaxEpsilon: 1, Clock: net.Clock()})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Attach(ep); err != nil {
			t.Fatal(err)
		}
		return led
	}
	// memnet ids must be unique; both processes act as peer "owner" towards
	// the user through the Select, which names "owner".
	led := start("owner")
	publish(userEP, 0, announce)
	net.RunFor(time.Second)
	publish(userEP, 1, selectMe())
	net.RunFor(time.Second)
	led.Close()
	net.Kill("owner")
	if shares != 1 {
		t.Fatalf("first process released %d shares", shares)
	}
	led2 := start("owner-restarted")
	defer led2.Close()
	if !led2.Contributed("s") {
		t.Fatal("the reopened ledger forgot the contribution")
	}
	// The restarted owner does not join the session it already gave a
	// share to (its ledger says so), so a Select naming it finds nothing.
	publish(userEP, 0, announce)
	net.RunFor(time.Second)
	publish(userEP, 1, selectMe())
	net.RunFor(time.Second)
	if shares != 1 {
		t.Fatalf("after restart: %d shares; want 1", shares)
	}
}

func schemaOf(d *dataset.Dataset) string {
	if d.Schema == nil {
		return ""
	}
	return d.Schema.Digest()
}

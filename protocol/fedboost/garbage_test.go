package fedboost

import (
	"time"

	"testing"

	"github.com/ppboost/ppboost/boost"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
	"google.golang.org/protobuf/proto"
)

type recorder struct{ sent, published int }

func (r *recorder) Send(protocol.PeerID, string, []byte) { r.sent++ }
func (r *recorder) Publish(string, []byte)               { r.published++ }

// Garbage reaching an owner is dropped and counted under its reason; the
// owner sends nothing and spends nothing.
func TestOwnerDropsGarbage(t *testing.T) {
	union, parts := testData(t, 400, 10)
	cfg := dpboost.DefaultConfig()
	cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Bins = 2, 2, 2, 8
	pub := testPublic(union, parts, cfg, 2, true)
	pub.Session, pub.Beacon = "s", []byte("b")
	for i := range 10 {
		pub.Roster = append(pub.Roster, OwnerID(i))
	}
	rec := &recorder{}
	led := protocol.NewMemLedger(100)
	o, err := NewOwner(OwnerID(0), rec, OwnerConfig{User: "user", Data: parts[0], Ledger: led, MaxEpsilon: 100, MinParties: 3, Colluders: 1, Clock: handClock()})
	if err != nil {
		t.Fatal(err)
	}
	ctl := func(from protocol.PeerID, env *wire.Envelope) protocol.Message {
		b, err := wire.Marshal(env, wire.MaxControlBytes)
		if err != nil {
			t.Fatal(err)
		}
		return protocol.Message{From: from, Topic: wire.TopicFedControl, Data: b}
	}
	hdr := func(round uint32) *wire.Header {
		return &wire.Header{Version: wire.Version, Session: "s", Round: round}
	}
	good, _ := pub.Marshal()
	bad := pub
	bad.Sum.MinParties = 2 // below this owner's floor
	badb, _ := bad.Marshal()
	cases := []struct {
		reason string
		msg    protocol.Message
	}{
		{"malformed", protocol.Message{From: "user", Topic: wire.TopicFedControl, Data: []byte{0xff, 0x01}}},
		{protocol.ErrNotUser.Error(), ctl("mallory", &wire.Envelope{Header: hdr(0), Body: &wire.Envelope_FedConfig{FedConfig: fedConfigOf(t, good)}})},
		{"config refused", ctl("user", &wire.Envelope{Header: hdr(0), Body: &wire.Envelope_FedConfig{FedConfig: &wire.FedConfig{Session: "s"}}})},
		{"config refused", ctl("user", &wire.Envelope{Header: hdr(0), Body: &wire.Envelope_FedConfig{FedConfig: fedConfigOf(t, badb)}})},
		{protocol.ErrWrongSession.Error(), protocol.Message{From: OwnerID(1), Protocol: wire.ProtoFedShamir,
			Data: mustMarshal(t, &wire.Envelope{Header: hdr(1), Body: &wire.Envelope_Sum{Sum: &wire.Sum{Kind: wire.Sum_SHAMIR_SHARE}}})}},
	}
	for _, c := range cases {
		before := o.Stats().Get(c.reason)
		o.Handle(c.msg)
		if o.Stats().Get(c.reason) != before+1 {
			t.Fatalf("%q not counted: %v", c.reason, o.Stats())
		}
	}
	if o.State() != OwnerIdle {
		t.Fatalf("state %s after garbage", o.State())
	}
	// Join properly, then a tree out of range and a SumStart for an unknown purpose.
	o.Handle(ctl("user", &wire.Envelope{Header: hdr(0), Body: &wire.Envelope_FedConfig{FedConfig: fedConfigOf(t, good)}}))
	if o.State() != OwnerJoined {
		t.Fatalf("did not join: %v", o.Stats())
	}
	before, outside := o.Stats().Get("malformed"), o.Stats().Get("outside the plan")
	o.Handle(ctl("user", &wire.Envelope{Header: hdr(1), Body: &wire.Envelope_FedTree{FedTree: &wire.FedTree{Levels: 1, Feature: []uint32{999}, Bin: []uint32{0}}}}))
	o.Handle(ctl("user", &wire.Envelope{Header: hdr(1), Body: &wire.Envelope_SumStart{SumStart: &wire.SumStart{Purpose: "steal/0", Method: "shamir", Length: 4}}}))
	if got := o.Stats().Get("malformed"); got != before+1 {
		t.Fatalf("malformed count %d, want %d: %v", got, before+1, o.Stats())
	}
	if got := o.Stats().Get("outside the plan"); got != outside+1 {
		t.Fatalf("outside-the-plan count %d, want %d: %v", got, outside+1, o.Stats())
	}
	if rec.sent != 0 || rec.published != 0 || led.Spent() != 0 {
		t.Fatalf("garbage made the owner send (%d, %d) or spend (%v)", rec.sent, rec.published, led.Spent())
	}
}

func mustMarshal(t *testing.T, env *wire.Envelope) []byte {
	b, err := wire.Marshal(env, wire.MaxSumFrameBytes)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The colluder count is the owner's to decide (issue 19 item 3): an owner
// on default flags (colluders all) refuses a FedConfig whose shares are
// sized for floor - 1 honest dealers, and spends nothing; an owner that
// assumes one colluder, and a session sized for one honest dealer, go
// ahead.
func TestOwnerRefusesFewerColludersThanItsOwn(t *testing.T) {
	union, parts := testData(t, 400, 10)
	cfg := dpboost.DefaultConfig()
	cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Bins = 2, 2, 2, 8
	pub := testPublic(union, parts, cfg, 2, true) // colluders 1
	pub.Session, pub.Beacon = "s", []byte("b")
	for i := range 10 {
		pub.Roster = append(pub.Roster, OwnerID(i))
	}
	all := pub
	all.Colluders = boost.ColludersAll
	for _, c := range []struct {
		name      string
		announced Public
		own       int
		refused   bool
	}{
		{"default owner, one colluder announced", pub, 0, true},
		{"owner assuming one colluder", pub, 1, false},
		{"default owner, colluders all", all, 0, false},
	} {
		led := protocol.NewMemLedger(100)
		o, err := NewOwner(OwnerID(0), &recorder{}, OwnerConfig{User: "user", Data: parts[0], Ledger: led, MaxEpsilon: 100, MinParties: 3, Colluders: c.own, Clock: handClock()})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.announced.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		env := &wire.Envelope{Header: &wire.Header{Version: wire.Version, Session: "s"}, Body: &wire.Envelope_FedConfig{FedConfig: fedConfigOf(t, b)}}
		before := o.Stats().Get("config refused")
		o.Handle(protocol.Message{From: "user", Topic: wire.TopicFedControl, Data: mustMarshal(t, env)})
		if got := o.Stats().Get("config refused") > before; got != c.refused {
			t.Errorf("%s: refused %v, want %v", c.name, got, c.refused)
		}
		if led.Spent() != 0 {
			t.Errorf("%s: spent %v on a FedConfig", c.name, led.Spent())
		}
	}
}

// handClock is the clock of the tests that drive an owner by hand: a
// ManualClock, so the owner's loop runs each Handle inline, before it returns.
func handClock() protocol.Clock { return protocol.NewManualClock(time.Time{}) }

// fedConfigOf decodes a Public.Marshal encoding into its FedConfig.
func fedConfigOf(t *testing.T, b []byte) *wire.FedConfig {
	t.Helper()
	var w wire.FedConfig
	if err := proto.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	return &w
}

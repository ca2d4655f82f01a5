package pfds

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Every message round-trips through its protobuf encoding.
func TestMessagesRoundTrip(t *testing.T) {
	ann := &Announce{Session: "s1", Params: testParams(), Learner: bp.LogReg, SchemaDigest: "digest",
		Roster: []protocol.PeerID{alice, bob}, TreeTimeout: 1000, DataTimeout: 2000}
	h, got, err := DecodeAnnounce(EncodeAnnounce(announcer, ann))
	if err != nil || h != (Header{KindAnnounce, "s1", announcer}) || !reflect.DeepEqual(got, ann) {
		t.Fatalf("announce: %v %+v %+v", err, h, got)
	}
	tr := bp.MakeTree(testDomain(), testLocal("rt").X, testLocal("rt").Y, testParams(), rng.Seeded(1))
	h, gt, err := DecodeTreeShare(EncodeTree(Header{Session: "s1", Author: bob}, bp.AppendTree(nil, tr, testDomain()), nil), testDomain(), 3, 0)
	if err != nil || h.Kind != KindTree || !reflect.DeepEqual(bp.AppendTree(nil, gt, testDomain()), bp.AppendTree(nil, tr, testDomain())) {
		t.Fatalf("tree: %v %+v", err, h)
	}
	ds := &bp.DataShare{Counts: []int{1, 0, 2}, Seed: 9, Labels: []int{0, 1, 1}}
	h, gd, err := DecodeDataShare(EncodeData(Header{Session: "s1", Author: bob}, ds), 2)
	if err != nil || h.Kind != KindData || !reflect.DeepEqual(gd, ds) {
		t.Fatalf("data: %v %+v %+v", err, h, gd)
	}
}

// Malformed messages are refused with an error naming the message and the
// field; a well-formed message of another version is ErrVersion.
func TestDecodeErrorsNameTheField(t *testing.T) {
	enc := func(m *wire.PfdsMessage) []byte {
		if m.Version == 0 {
			m.Version = Version
		}
		if m.Session == "" {
			m.Session, m.Author = "s1", "bob"
		}
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := func() *wire.PfdsAnnounce {
		p := testParams()
		return &wire.PfdsAnnounce{Eps: p.Eps, Hmax: uint32(p.HMax), T: uint32(p.T), P: uint32(p.P), Roster: []string{"a"}}
	}
	ann := func(f func(*wire.PfdsAnnounce)) []byte {
		a := good()
		f(a)
		return enc(&wire.PfdsMessage{Body: &wire.PfdsMessage_Announce{Announce: a}})
	}
	data := func(d *wire.PfdsData) []byte { return enc(&wire.PfdsMessage{Body: &wire.PfdsMessage_Data{Data: d}}) }
	cases := []struct {
		name, want string
		b          []byte
		decode     func([]byte) error
	}{
		{"control: good announce", "", ann(func(*wire.PfdsAnnounce) {}), decAnn},
		{"garbage", "PfdsMessage", []byte{0xff, 0xff}, decAnn},
		{"version 1", "version", enc(&wire.PfdsMessage{Version: 1, Body: &wire.PfdsMessage_Tree{Tree: &wire.PfdsTree{}}}), decAnn},
		{"no body", "no body", enc(&wire.PfdsMessage{}), decAnn},
		{"hmax", "PfdsAnnounce.hmax", ann(func(a *wire.PfdsAnnounce) { a.Hmax = 5000 }), decAnn},
		{"learner", "PfdsAnnounce.learner", ann(func(a *wire.PfdsAnnounce) { a.Learner = 99 }), decAnn},
		{"roster repeat", "PfdsAnnounce.roster[1]", ann(func(a *wire.PfdsAnnounce) { a.Roster = []string{"a", "a"} }), decAnn},
		{"roster empty", "PfdsAnnounce.roster: empty", ann(func(a *wire.PfdsAnnounce) { a.Roster = nil }), decAnn},
		{"digest", "PfdsAnnounce.schema_digest", ann(func(a *wire.PfdsAnnounce) { a.SchemaDigest = strings.Repeat("d", 200) }), decAnn},
		{"labels vs counts", "PfdsData: 2 labels for 3 records", data(&wire.PfdsData{Counts: []uint32{1, 2}, Labels: []byte{0, 1}}), decData},
		{"label range", "PfdsData.labels[1]", data(&wire.PfdsData{Counts: []uint32{2}, Labels: []byte{0, 7}}), decData},
		{"records cap", "PfdsData.labels", data(&wire.PfdsData{Counts: []uint32{MaxShareRecords + 1}, Labels: make([]byte, MaxShareRecords+1)}), decData},
		{"tree bytes", "PfdsTree.tree", enc(&wire.PfdsMessage{Body: &wire.PfdsMessage_Tree{Tree: &wire.PfdsTree{Tree: []byte{0xff, 0xff, 0xff}}}}), decTree},
		{"kind", "not a data share", ann(func(*wire.PfdsAnnounce) {}), decData},
	}
	for _, c := range cases {
		err := c.decode(c.b)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.want)
		case c.want != "" && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrVersion):
			t.Errorf("%s: %v is neither ErrMalformed nor ErrVersion", c.name, err)
		}
	}
}

func decAnn(b []byte) error  { _, _, err := DecodeAnnounce(b); return err }
func decData(b []byte) error { _, _, err := DecodeDataShare(b, 2); return err }
func decTree(b []byte) error { _, _, err := DecodeTreeShare(b, testDomain(), 3, 0); return err }

// FuzzDecode: whatever the bytes, the decoders return a value or an error
// (never panic), and what they accept re-encodes to a message that decodes
// to the same value.
func FuzzDecode(f *testing.F) {
	f.Add(announcement(alice, bob))
	tr := bp.MakeTree(testDomain(), testLocal("f").X, testLocal("f").Y, testParams(), rng.Seeded(1))
	f.Add(EncodeTree(Header{Session: "s1", Author: bob}, bp.AppendTree(nil, tr, testDomain()), nil))
	f.Add(EncodeData(Header{Session: "s1", Author: bob}, &bp.DataShare{Counts: []int{1, 0, 2}, Seed: 9, Labels: []int{0, 1, 1}}))
	f.Add([]byte{})
	f.Add([]byte{1, 2, 0xff, 0xff}) // a version 1 tree header
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, a, err := DecodeAnnounce(b); err == nil {
			h2, a2, err := DecodeAnnounce(EncodeAnnounce(h.Author, a))
			if err != nil || h2 != h || !reflect.DeepEqual(a, a2) {
				t.Fatalf("announce does not round-trip: %v", err)
			}
		}
		if h, d, err := DecodeDataShare(b, 2); err == nil {
			h2, d2, err := DecodeDataShare(EncodeData(h, d), 2)
			if err != nil || h2 != h || !reflect.DeepEqual(d, d2) {
				t.Fatalf("data share does not round-trip: %v", err)
			}
		}
		if h, tr, err := DecodeTreeShare(b, testDomain(), 3, 0); err == nil {
			enc := bp.AppendTree(nil, tr, testDomain())
			if _, tr2, err := DecodeTreeShare(EncodeTree(h, enc, nil), testDomain(), 3, 0); err != nil || !reflect.DeepEqual(bp.AppendTree(nil, tr2, testDomain()), enc) {
				t.Fatalf("tree share does not round-trip: %v", err)
			}
		}
	})
}

// A PFDS-cv announcement round-trips with its Params filled from CV; a
// PFDS-cv tree share carries its leaf counts and is refused without them,
// with a count off the tree's shape or a label that is not the counts'
// argmax, and a PFDS tree share is refused with counts; each error names
// the field.
func TestVariantMessages(t *testing.T) {
	v := bp.VariantParams{Eps: 1, HMax: 3, MaxLeaves: 16, Threshold: 2, Sample: true}
	ann := &Announce{Session: "s1", CV: &v, Learner: bp.LogReg, SchemaDigest: "digest", Roster: []protocol.PeerID{alice, bob}}
	_, got, err := DecodeAnnounce(EncodeAnnounce(announcer, ann))
	if err != nil || got.CV == nil || *got.CV != v || got.Params != VariantParams(v) || got.Variant() != "pfds-cv" {
		t.Fatalf("cv announce: %v %+v", err, got)
	}
	bad := v
	bad.Threshold = math.Inf(1)
	if _, _, err := DecodeAnnounce(EncodeAnnounce(announcer, &Announce{Session: "s1", CV: &bad, Roster: []protocol.PeerID{alice}})); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "PfdsAnnounce.cv") {
		t.Fatalf("infinite threshold: %v", err)
	}
	dom := testDomain()
	tr, err := bp.MakeVariantTree(dom, testLocal("cv").X, testLocal("cv").Y, v, rng.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	counts, err := bp.LeafCounts(tr, dom.Classes)
	if err != nil {
		t.Fatal(err)
	}
	enc := bp.AppendTree(nil, tr, dom)
	h := Header{Session: "s1", Author: bob}
	_, gt, err := DecodeSessionTree(EncodeTree(h, enc, counts), dom, got)
	if err != nil || !reflect.DeepEqual(gt, tr) {
		t.Fatalf("cv tree: %v; equal %v", err, reflect.DeepEqual(gt, tr))
	}
	flip := append([]int64(nil), counts...)
	leaf := tr.Nodes[tr.Leaves()[0]]
	flip[leaf.Label] = -100 // the first leaf's label is no longer its counts' argmax
	huge := append([]int64(nil), counts...)
	huge[0] = 1 << 50
	faithful := &Announce{Params: testParams()}
	for _, c := range []struct {
		name string
		msg  []byte
		ann  *Announce
		want string
	}{
		{"no counts", EncodeTree(h, enc, nil), got, "PfdsTree.leaf_counts"},
		{"one count short", EncodeTree(h, enc, counts[1:]), got, "PfdsTree.leaf_counts"},
		{"label not the argmax", EncodeTree(h, enc, flip), got, "argmax"},
		{"count over the cap", EncodeTree(h, enc, huge), got, "over"},
		{"counts in a PFDS session", EncodeTree(h, enc, counts), faithful, "only PFDS-cv publishes them"},
	} {
		if _, _, err := DecodeSessionTree(c.msg, dom, c.ann); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrMalformed naming %q", c.name, err, c.want)
		}
	}
}

// An announcement's roster addresses round-trip; a list that names another
// member's id, or has more lists than members, is malformed and the error
// names the entry.
func TestAnnounceRosterAddrs(t *testing.T) {
	roster := []protocol.PeerID{alice, bob}
	addrs := [][]string{{"/ip4/1.2.3.4/udp/4001/quic-v1/p2p/alice", "/ip4/1.2.3.4/tcp/4001/p2p/alice"}, {}}
	ann := &Announce{Session: "s1", Params: testParams(), Roster: roster, RosterAddrs: addrs}
	_, got, err := DecodeAnnounce(EncodeAnnounce(announcer, ann))
	if err != nil || !reflect.DeepEqual(got.RosterAddrs, addrs) {
		t.Fatalf("round trip: %v %q", err, got.RosterAddrs)
	}
	for _, c := range []struct {
		addrs [][]string
		want  string
	}{
		{[][]string{{"/ip4/1.2.3.4/tcp/1/p2p/bob"}, {}}, `roster_addrs[0] (alice): address 0 "/ip4/1.2.3.4/tcp/1/p2p/bob" does not end in the member's own /p2p/alice`},
		{[][]string{{}, {}, {}}, "roster_addrs: 3 entries for 2 roster members"},
	} {
		ann.RosterAddrs = c.addrs
		if _, _, err := DecodeAnnounce(EncodeAnnounce(announcer, ann)); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.addrs, err, c.want)
		}
	}
}

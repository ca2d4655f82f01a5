package fedboost

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/protocol/wire"
)

func wirePublic(t *testing.T) Public {
	union, parts := testData(t, 200, 10)
	cfg := dpboost.DefaultConfig()
	cfg.Trees, cfg.EnsembleSize, cfg.Depth = 4, 2, 2
	cfg.ClipGradients = true
	p := testPublic(union, parts, cfg, 2, true)
	p.Session, p.Beacon, p.SplitFraction = "s", []byte("beacon"), 0.7
	for i := range 10 {
		p.Roster = append(p.Roster, OwnerID(i))
	}
	return p
}

// The typed FedConfig carries every announced field of Public: what an
// owner decodes is what the user computed its plan from, exactly
// (durations in nanoseconds, floats as doubles), so both compute the same
// groups, layouts and noise.
func TestFedConfigRoundTrip(t *testing.T) {
	p := wirePublic(t)
	p.RosterAddrs = make([][]string, len(p.Roster))
	for i, m := range p.Roster {
		p.RosterAddrs[i] = []string{"/ip4/127.0.0.1/tcp/4001/p2p/" + string(m), "/ip4/127.0.0.1/udp/4001/quic-v1/p2p/" + string(m)}
	}
	p.RosterAddrs[3] = []string{} // a member whose address the user does not know
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	q, err := ParsePublic(b)
	if err != nil {
		t.Fatal(err)
	}
	p.newton, q.newton = nil, nil
	if !reflect.DeepEqual(&p, q) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", q, &p)
	}
	// Every exported field of Public is announced: a field added to
	// Public without a FedConfig counterpart is lost on the way and fails
	// here once it is set (the number of Public's fields is pinned).
	if n := reflect.TypeOf(Public{}).NumField(); n != 17 { // 16 announced (FedConfig fields 2-17) and the Newton cache
		t.Fatalf("Public has %d fields: give the new one a FedConfig field, then update this count", n)
	}
	// Colluders all (-1) survives the signed field.
	p.Colluders = boost.ColludersAll
	if q, err := PublicFromWire(p.Wire()); err != nil || q.Colluders != boost.ColludersAll {
		t.Fatalf("colluders all: %v, %v", err, q)
	}
}

// A bad FedConfig is refused with ErrConfig naming the field.
func TestFedConfigErrorsNameTheField(t *testing.T) {
	p := wirePublic(t)
	for _, c := range []struct {
		want string
		mod  func(*wire.FedConfig)
	}{
		{"FedConfig.boost: missing", func(w *wire.FedConfig) { w.Boost = nil }},
		{"FedConfig.sum: missing", func(w *wire.FedConfig) { w.Sum = nil }},
		{"FedConfig.boost.method", func(w *wire.FedConfig) { w.Boost.Method = "xgboost" }},
		{"FedConfig.boost.task", func(w *wire.FedConfig) { w.Boost.Task = "ranking" }},
		{"FedConfig.max_rows", func(w *wire.FedConfig) { w.MaxRows = 1 << 40 }},
		{"FedConfig.colluders -5", func(w *wire.FedConfig) { w.Colluders = -5 }},
		{"FedConfig.step_timeout_ns", func(w *wire.FedConfig) { w.StepTimeoutNs = -1 }},
		{"FedConfig.sum.scale_bits", func(w *wire.FedConfig) { w.Sum.ScaleBits = 100 }},
		{"Schema.columns[0]: missing", func(w *wire.FedConfig) { w.Schema.Columns[0] = nil }},
		{"roster empty or not sorted", func(w *wire.FedConfig) { w.Roster[0], w.Roster[1] = w.Roster[1], w.Roster[0] }},
	} {
		w := p.Wire()
		c.mod(w)
		_, err := PublicFromWire(w)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v", c.want, err)
		}
	}
	if _, err := PublicFromWire(p.Wire()); err != nil {
		t.Fatalf("control: the unmodified config is refused: %v", err)
	}
}

// A FedConfig's roster_addrs are refused, naming the member and the
// address, when they are not one list per member, a list is too long, an
// address too long, not a multiaddr, or not the member's own; none at all
// is fine (owners then need --bootstrap or --mdns to reach each other).
func TestFedConfigRosterAddrsValidated(t *testing.T) {
	p := wirePublic(t)
	own := func(i int) string { return "/ip4/10.0.0.1/tcp/4001/p2p/" + string(p.Roster[i]) }
	good := func() []string {
		out := make([]string, len(p.Roster))
		for i := range p.Roster {
			out[i] = own(i)
		}
		return out
	}
	for _, c := range []struct {
		name, want string
		addrs      func() []string
	}{
		{"fewer lists than members", "FedConfig.roster_addrs: 9 entries for 10 roster members", func() []string { return good()[1:] }},
		{"too many addresses", "roster_addrs[2] (" + string(p.Roster[2]) + "): 9 addresses (at most 8)", func() []string {
			a := good()
			a[2] = strings.TrimSpace(strings.Repeat(own(2)+" ", 9))
			return a
		}},
		{"address too long", "roster_addrs[4] (" + string(p.Roster[4]) + "): address 0 is 279 bytes (at most 256)", func() []string {
			a := good()
			a[4] = "/dns4/" + strings.Repeat("x", 250) + "/tcp/1/p2p/" + string(p.Roster[4])
			return a
		}},
		{"oversized text", "roster_addrs[1]: 4000 bytes", func() []string {
			a := good()
			a[1] = strings.Repeat("/", 4000)
			return a
		}},
		{"not a multiaddr", "roster_addrs[0] (" + string(p.Roster[0]) + "): address 0 \"ip4/1.2.3.4/p2p/", func() []string {
			a := good()
			a[0] = "ip4/1.2.3.4/p2p/" + string(p.Roster[0])
			return a
		}},
		{"control character", "is not a multiaddr", func() []string {
			a := good()
			a[0] = "/ip4/1.2.3.4\x00/p2p/" + string(p.Roster[0])
			return a
		}},
		{"double space", "roster_addrs[5] (" + string(p.Roster[5]) + "): address 1 \"\" is not a multiaddr", func() []string {
			a := good()
			a[5] = own(5) + "  " + own(5)
			return a
		}},
		{"another member's address", "does not end in the member's own /p2p/" + string(p.Roster[6]), func() []string {
			a := good()
			a[6] = own(7)
			return a
		}},
		{"bare /p2p/ suffix", "does not end in the member's own", func() []string {
			a := good()
			a[6] = "/p2p/" + string(p.Roster[6])
			return a
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := p.Wire()
			w.RosterAddrs = c.addrs()
			_, err := PublicFromWire(w)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an ErrConfig containing %q", err, c.want)
			}
		})
	}
	w := p.Wire()
	w.RosterAddrs = good()
	q, err := PublicFromWire(w)
	if err != nil {
		t.Fatalf("control: one own address per member is refused: %v", err)
	}
	if len(q.RosterAddrs) != len(p.Roster) || q.RosterAddrs[9][0] != own(9) {
		t.Fatalf("decoded roster_addrs %v", q.RosterAddrs)
	}
	w.RosterAddrs = nil
	if q, err := PublicFromWire(w); err != nil || q.RosterAddrs != nil {
		t.Fatalf("no addresses: %v, %v", err, q.RosterAddrs)
	}
}

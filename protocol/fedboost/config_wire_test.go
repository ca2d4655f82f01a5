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
	if n := reflect.TypeOf(Public{}).NumField(); n != 16 { // 15 announced (FedConfig fields 2-16) and the Newton cache
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

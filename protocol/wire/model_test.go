package wire_test

import (
	"bytes"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol/wire"
)

// wcModel trains a small W&C model with the given learner on K-class
// synthetic data (mechanism none, so that it is quick and has rounds).
func wcModel(t testing.TB, learner boost.Learner, classes int) *boost.Model {
	t.Helper()
	cfg := boost.DefaultConfig()
	cfg.Learner, cfg.Mechanism, cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = learner, "none", 20, 3, 7
	sc := dataset.DefaultSynthetic(20*2*3*30+600+200, 7)
	sc.Classes = classes
	all, err := dataset.Synthetic(sc)
	if err != nil {
		t.Fatal(err)
	}
	data, err := boost.Cut(all, nil, boost.DataSpec{SamplesPerOwner: 30, Owners: 20 * 2 * 3, UserSamples: 600, TestSamples: 200, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	m, err := boost.Train(cfg, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Rounds) == 0 {
		t.Fatalf("%s: no accepted round", learner)
	}
	return m
}

// dpModel trains a small DPBoost model (method, K classes).
func dpModel(t testing.TB, method dpboost.Method, classes int) *dpboost.Model {
	t.Helper()
	cfg := dpboost.DefaultConfig()
	cfg.Method, cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Bins = method, 4, 2, 3, 16
	if method == dpboost.Newton {
		cfg.Delta, cfg.HessianShare, cfg.LeafMax = 1e-6, 0.5, 1
	}
	sc := dataset.DefaultSynthetic(600, 3)
	sc.Classes = classes
	d, err := dataset.Synthetic(sc)
	if err != nil {
		t.Fatal(err)
	}
	m, err := dpboost.TrainClassifier(cfg, d, rng.Seeded(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fileBytes is a model's file form: what an owner that saves the received
// model writes. A wire round trip must not change a byte of it.
func fileBytes(t *testing.T, m interface{ Write(w *bytes.Buffer) error }) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := m.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type wcFile struct{ *boost.Model }

func (m wcFile) Write(w *bytes.Buffer) error { return m.Model.Write(w) }

type dpFile struct{ *dpboost.Model }

func (m dpFile) Write(w *bytes.Buffer) error { return m.Model.Write(w) }

// reencode marshals a Final inside an envelope and decodes it, as an owner
// receives it.
func reencode(t *testing.T, f *wire.Final) *wire.Final {
	t.Helper()
	env, err := wire.Wrap(&wire.Header{Version: wire.Version, Session: "s"}, f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.Marshal(env, wire.MaxControlBytes)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.Unmarshal(b, wire.MaxControlBytes)
	if err != nil {
		t.Fatal(err)
	}
	return got.GetFinal()
}

// Every learner kind a W&C session can publish (boost.Base: stump, ncc,
// logreg; two and three classes, so logreg has one vector or K) survives
// Learner and Final unchanged, and the model file an owner saves is the data
// user's byte for byte but for the fill values (boost.Model.Fill), the
// statistics of the user's own rows, which never leave the user.
func TestWCModelRoundTrip(t *testing.T) {
	for _, c := range []struct {
		learner boost.Learner
		classes int
	}{{boost.Stump, 2}, {boost.Stump, 3}, {boost.NCC, 2}, {boost.NCC, 3}, {boost.LogReg, 2}, {boost.LogReg, 3}} {
		t.Run(string(c.learner)+"/"+string(rune('0'+c.classes)), func(t *testing.T) {
			m := wcModel(t, c.learner, c.classes)
			d := len(m.Features)
			for i := range m.Rounds {
				base := &m.Rounds[i].Base
				l, err := wire.LearnerOf(base)
				if err != nil {
					t.Fatal(err)
				}
				var back wire.Learner
				raw, _ := proto.Marshal(l)
				if err := proto.Unmarshal(raw, &back); err != nil {
					t.Fatal(err)
				}
				got, err := back.ToBase(m.Classes, d)
				if err != nil {
					t.Fatalf("round %d: %v", i+1, err)
				}
				if !reflect.DeepEqual(got, base) {
					t.Fatalf("round %d: learner %+v, want %+v", i+1, got, base)
				}
			}
			for _, partial := range []bool{false, true} {
				mm := *m
				if partial {
					mm.Partial = &boost.Partial{Rounds: len(m.Rounds), Planned: len(m.Rounds) + 2, Reason: "user stopped"}
				}
				f, err := wire.FinalWC(&mm, &wire.Outcome{Kind: wire.Outcome_COMPLETE})
				if err != nil {
					t.Fatal(err)
				}
				got, err := reencode(t, f).ToBoostModel()
				if err != nil {
					t.Fatal(err)
				}
				if got.Fill != nil {
					t.Fatalf("partial=%v: the user's fill values went on the wire: %+v", partial, got.Fill)
				}
				mine := mm
				mine.Fill = nil
				if want, have := fileBytes(t, wcFile{&mine}), fileBytes(t, wcFile{got}); !bytes.Equal(want, have) {
					t.Fatalf("partial=%v: model file differs after the wire:\n%s\nwant\n%s", partial, have, want)
				}
				if _, err := reencode(t, f).ToDPBoostModel(); err == nil || !strings.Contains(err.Error(), "Final.dpboost: missing (the Final carries a W&C model)") {
					t.Fatalf("a W&C Final read as DPBoost: %v", err)
				}
			}
		})
	}
}

// The configuration carries every field of boost.Config that a model file
// records: a Config with each of them set survives the wire. A field added
// to boost.Config without its wire counterpart fails here.
func TestBoostConfigEveryField(t *testing.T) {
	m := wcModel(t, boost.Stump, 2)
	c := boost.Config{Learner: boost.LogReg, Mechanism: "duchi", Epsilon: 1.5, Rounds: 9, OwnersPerRound: 11,
		Alpha: boost.AlphaSecureSum, Thresholds: boost.ThresholdMedian, SplitsPerFeature: 3, MaxSplits: 7,
		MaxAttempts: 4, Significance: 0.01, LogRegIterations: 12, LogRegL2: 0.25, LogRegNormalize: true,
		Privacy: boost.PrivacyDistributed, PrivacyClip: 3, DropFraction: 0.2, Colluders: 5, ErrEpsilon: 0.3,
		ErrClip: 2, Seed: 1<<63 + 5}
	v := reflect.ValueOf(c)
	for i := 0; i < v.NumField(); i++ {
		if f := v.Type().Field(i); f.Tag.Get("json") != "-" && v.Field(i).IsZero() {
			t.Fatalf("test config leaves boost.Config.%s zero: set it (and carry it in wire.BoostConfig)", f.Name)
		}
	}
	for _, col := range []int{5, boost.ColludersAll} {
		c.Colluders = col
		mm := *m
		mm.Config = c
		f, err := wire.FinalWC(&mm, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := reencode(t, f).ToBoostModel()
		if err != nil {
			t.Fatal(err)
		}
		if got.Config != c {
			t.Fatalf("config %+v, want %+v", got.Config, c)
		}
	}
}

// DPBoost models (the federated Final): binary and one-vs-rest, DPBoost's
// pure-DP account and Newton's zCDP one, survive the wire byte for byte and
// predict the same.
func TestDPBoostModelRoundTrip(t *testing.T) {
	for _, c := range []struct {
		method  dpboost.Method
		classes int
	}{{dpboost.DPBoost, 2}, {dpboost.DPBoost, 3}, {dpboost.NP, 2}, {dpboost.Newton, 2}} {
		t.Run(c.method.String()+"/"+string(rune('0'+c.classes)), func(t *testing.T) {
			m := dpModel(t, c.method, c.classes)
			if c.method == dpboost.Newton && m.Account.Newton == nil {
				t.Fatal("Newton model without its zCDP account: the test covers nothing")
			}
			f := wire.FinalDPBoost(m, &wire.Outcome{Kind: wire.Outcome_COMPLETE, Rounds: 4, Planned: 4})
			got, err := reencode(t, f).ToDPBoostModel()
			if err != nil {
				t.Fatal(err)
			}
			if want, have := fileBytes(t, dpFile{m}), fileBytes(t, dpFile{got}); !bytes.Equal(want, have) {
				t.Fatalf("model file differs after the wire:\n%s\nwant\n%s", have, want)
			}
			x := make([]float64, len(m.Features))
			for i := range 50 {
				for j := range x {
					x[j] = math.Sin(float64(i*len(x) + j))
				}
				if got.Predict(x) != m.Predict(x) {
					t.Fatalf("row %d: prediction %d, want %d", i, got.Predict(x), m.Predict(x))
				}
			}
			if _, err := reencode(t, f).ToBoostModel(); err == nil || !strings.Contains(err.Error(), "Final.wc: missing (the Final carries a DPBoost model)") {
				t.Fatalf("a DPBoost Final read as W&C: %v", err)
			}
		})
	}
}

// Malformed models are refused with an error that wraps ErrMalformed and
// names the message and the field.
func TestModelWireErrors(t *testing.T) {
	stump := func() *wire.Learner {
		return &wire.Learner{Base: &wire.BaseLearner{Kind: &wire.BaseLearner_Stump{Stump: &wire.Stump{Feature: 1, Threshold: 0.5, Right: 1}}}}
	}
	matrix := func(ncc bool, rows, cols uint32, n int) *wire.Learner {
		m := &wire.Matrix{Rows: rows, Cols: cols, Values: make([]float64, n)}
		if ncc {
			return &wire.Learner{Base: &wire.BaseLearner{Kind: &wire.BaseLearner_Ncc{Ncc: m}}}
		}
		return &wire.Learner{Base: &wire.BaseLearner{Kind: &wire.BaseLearner_Logreg{Logreg: m}}}
	}
	learners := []struct {
		name string
		l    *wire.Learner
		edit func(*wire.Learner)
		want string
	}{
		{"no base", &wire.Learner{}, nil, "Learner.base: missing"},
		{"no kind", &wire.Learner{Base: &wire.BaseLearner{}}, nil, "Learner.base.kind: missing"},
		{"stump feature", stump(), func(l *wire.Learner) { l.Base.GetStump().Feature = 4 }, "Learner.base.stump.feature: 4 outside [0,4)"},
		{"stump left", stump(), func(l *wire.Learner) { l.Base.GetStump().Left = 2 }, "Learner.base.stump.left: class 2 outside [0,2)"},
		{"stump right", stump(), func(l *wire.Learner) { l.Base.GetStump().Right = 1 << 31 }, "Learner.base.stump.right"},
		{"stump NaN", stump(), func(l *wire.Learner) { l.Base.GetStump().Threshold = math.NaN() }, "Learner.base.stump.threshold: NaN is not finite"},
		{"ncc rows", matrix(true, 3, 4, 12), nil, "Learner.base.ncc.rows: 3, want 2"},
		{"ncc cols", matrix(true, 2, 5, 10), nil, "Learner.base.ncc.cols: 5, want 4"},
		{"ncc huge", matrix(true, 2, 4, 1), func(l *wire.Learner) { l.Base.GetNcc().Rows = math.MaxUint32 }, "Learner.base.ncc.rows"},
		{"ncc values", matrix(true, 2, 4, 7), nil, "Learner.base.ncc.values: 7 values for 2 x 4"},
		{"ncc Inf", matrix(true, 2, 4, 8), func(l *wire.Learner) { l.Base.GetNcc().Values[6] = math.Inf(-1) }, "Learner.base.ncc.values[6]: -Inf is not finite"},
		{"logreg rows", matrix(false, 2, 5, 10), nil, "Learner.base.logreg.rows: 2, want 1"},
		{"logreg cols", matrix(false, 1, 4, 4), nil, "Learner.base.logreg.cols: 4, want 5"},
	}
	for _, c := range learners {
		t.Run("learner/"+c.name, func(t *testing.T) {
			if c.edit != nil {
				c.edit(c.l)
			}
			_, err := c.l.ToBase(2, 4)
			if !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one naming %q", err, c.want)
			}
		})
	}
	for _, l := range []*wire.Learner{stump(), matrix(true, 2, 4, 8), matrix(false, 1, 5, 5)} { // the control
		if _, err := l.ToBase(2, 4); err != nil {
			t.Fatalf("well-formed learner refused: %v", err)
		}
	}

	wc := func(t *testing.T) *wire.Final {
		f, err := wire.FinalWC(wcModel(t, boost.Stump, 2), nil)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	finals := []struct {
		name string
		edit func(*wire.WCModel)
		want string
	}{
		{"classes", func(w *wire.WCModel) { w.Classes = 1 << 20 }, "Final.wc.classes: 1048576 outside [2,1024]"},
		{"class names", func(w *wire.WCModel) { w.ClassNames = w.ClassNames[:1] }, "Final.wc.class_names: 1 names for 2 classes"},
		{"features", func(w *wire.WCModel) { w.Features = nil }, "Final.wc.features: 0 names"},
		{"config", func(w *wire.WCModel) { w.Config = nil }, "Final.wc.config: missing"},
		{"config NaN", func(w *wire.WCModel) { w.Config.ErrClip = math.NaN() }, "Final.wc.config.err_clip: NaN is not finite"},
		{"colluders", func(w *wire.WCModel) { w.Config.Colluders = -2 }, "Final.wc.config.colluders: -2"},
		{"split feature", func(w *wire.WCModel) { w.Splits[0].Feature = 99 }, "Final.wc.splits[0].feature: 99 outside [0,20)"},
		{"round alpha", func(w *wire.WCModel) { w.Rounds[1].Alpha = -1 }, "Final.wc.rounds[1].alpha: -1"},
		{"round err", func(w *wire.WCModel) { w.Rounds[0].Err = math.Inf(1) }, "Final.wc.rounds[0].err: +Inf is not finite"},
		{"round base", func(w *wire.WCModel) { w.Rounds[0].Base = nil }, "Final.wc.rounds[0].base: missing"},
		{"round stump", func(w *wire.WCModel) { w.Rounds[0].Base.GetStump().Feature = 20 }, "Final.wc.rounds[0].base.stump.feature: 20 outside [0,20)"},
		{"partial rounds", func(w *wire.WCModel) { w.Partial = &wire.WCPartial{Rounds: 9, Planned: 10} }, "Final.wc.partial.rounds: 9"},
		{"partial planned", func(w *wire.WCModel) { w.Partial = &wire.WCPartial{Rounds: uint32(len(w.Rounds)), Planned: 1} }, "Final.wc.partial.planned"},
		{"schema width", func(w *wire.WCModel) {
			w.Schema = &wire.Schema{Version: 1, Label: "y", Classes: []string{"a", "b"}, Columns: []*wire.SchemaColumn{{Name: "x", Kind: "numeric", Max: 1}}}
		}, "Final.wc: invalid model file: schema has 1 features, model 20"},
		{"schema NaN", func(w *wire.WCModel) { w.Schema.Columns[7].Min = math.NaN() }, "Final.wc.schema: invalid schema: column \"x7\": bounds [NaN, 1]"},
	}
	for _, c := range finals {
		t.Run("wc/"+c.name, func(t *testing.T) {
			f := wc(t)
			c.edit(f.GetWc())
			_, err := reencode(t, f).ToBoostModel()
			if !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one naming %q", err, c.want)
			}
		})
	}
	if _, err := (&wire.Final{}).ToBoostModel(); err == nil || !strings.Contains(err.Error(), "Final.wc: missing") {
		t.Fatalf("empty Final: %v", err)
	}

	dp := dpModel(t, dpboost.DPBoost, 2)
	dps := []struct {
		name string
		edit func(*wire.DPBoostModel)
		want string
	}{
		{"config", func(w *wire.DPBoostModel) { w.Config = nil }, "Final.dpboost.config: missing"},
		{"method", func(w *wire.DPBoostModel) { w.Config.Method = "xgb" }, "Final.dpboost.config.method"},
		{"depth", func(w *wire.DPBoostModel) { w.Config.Depth = 40 }, "Final.dpboost.config.depth: 40, over 16"},
		{"lambda", func(w *wire.DPBoostModel) { w.Config.Lambda = math.Inf(1) }, "Final.dpboost.config.lambda: +Inf is not finite"},
		{"account", func(w *wire.DPBoostModel) { w.Account = nil }, "Final.dpboost.account: missing"},
		{"account total", func(w *wire.DPBoostModel) { w.Account.Total = math.NaN() }, "Final.dpboost.account.total: NaN is not finite"},
		{"account per tree", func(w *wire.DPBoostModel) { w.Account.PerTree[1] = math.NaN() }, "Final.dpboost.account.per_tree[1]: NaN"},
		{"features", func(w *wire.DPBoostModel) { w.Features = make([]string, wire.MaxModelFeatures+1) }, "Final.dpboost.features: 65537 names"},
		{"bins length", func(w *wire.DPBoostModel) { w.Bins = w.Bins[1:] }, "Final.dpboost.bins: 19 bin counts for 20 features"},
		{"bins value", func(w *wire.DPBoostModel) { w.Bins[3] = 1000 }, "Final.dpboost.bins[3]: 1000 outside [2,256]"},
		{"range low", func(w *wire.DPBoostModel) { w.RangeLow[2] = math.NaN() }, "Final.dpboost.range_low[2]: NaN"},
		{"boosters", func(w *wire.DPBoostModel) { w.Boosters = nil }, "Final.dpboost.boosters: 0, want 1 to 1024"},
		{"trees", func(w *wire.DPBoostModel) { w.Boosters[0].Trees = w.Boosters[0].Trees[1:] }, "Final.dpboost.boosters[0].trees: 3 trees, config.trees 4"},
		{"tree nodes", func(w *wire.DPBoostModel) { w.Boosters[0].Trees[2].Feature = append(w.Boosters[0].Trees[2].Feature, 0) }, "Final.dpboost.boosters[0].trees[2].feature: 8 nodes, the depth has 7"},
		{"tree leaves", func(w *wire.DPBoostModel) { w.Boosters[0].Trees[1].Leaf = nil }, "Final.dpboost.boosters[0].trees[1].leaf: 0 leaves, the depth has 8"},
		{"tree feature", func(w *wire.DPBoostModel) { w.Boosters[0].Trees[0].Feature[5] = 20 }, "Final.dpboost.boosters[0].trees[0].feature[5]: 20 outside [0,20)"},
		{"tree bin", func(w *wire.DPBoostModel) { w.Boosters[0].Trees[0].Bin[0] = 15 }, "Final.dpboost.boosters[0].trees[0].bin[0]: 15 outside [0,15)"},
		{"tree leaf", func(w *wire.DPBoostModel) { w.Boosters[0].Trees[3].Leaf[7] = math.Inf(1) }, "Final.dpboost.boosters[0].trees[3].leaf[7]: +Inf"},
		{"class names", func(w *wire.DPBoostModel) { w.ClassNames = w.ClassNames[:1] }, "Final.dpboost: dpboost: invalid model: 1 class names"},
	}
	for _, c := range dps {
		t.Run("dpboost/"+c.name, func(t *testing.T) {
			f := wire.FinalDPBoost(dp, nil)
			c.edit(f.GetDpboost())
			_, err := reencode(t, f).ToDPBoostModel()
			if !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one naming %q", err, c.want)
			}
		})
	}
	if _, err := wire.FinalDPBoost(dp, nil).ToDPBoostModel(); err != nil { // the control
		t.Fatalf("well-formed DPBoost Final refused: %v", err)
	}
}

// FuzzModelWire feeds arbitrary bytes to the model decoders (Learner and
// both kinds of Final): none may panic, and whatever they accept must be
// usable (Predict on a row of its width, saved as a model file) and survive
// a second round trip unchanged. testdata/fuzz/FuzzModelWire keeps what it
// found: a schema bound of NaN that made the saved file unwritable.
// Run: go test -run '^$' -fuzz '^FuzzModelWire$' -fuzztime 20s
// -fuzzminimizetime 200x ./protocol/wire (the default minimization, 60 s
// per interesting input, stalls the count on these 5 KB seeds).
func FuzzModelWire(f *testing.F) {
	for _, m := range []*boost.Model{wcModel(f, boost.Stump, 3), wcModel(f, boost.NCC, 2), wcModel(f, boost.LogReg, 3)} {
		fin, err := wire.FinalWC(m, nil)
		if err != nil {
			f.Fatal(err)
		}
		b, _ := proto.Marshal(fin)
		f.Add(b)
		l, _ := wire.LearnerOf(&m.Rounds[0].Base)
		b, _ = proto.Marshal(l)
		f.Add(b)
	}
	for _, m := range []*dpboost.Model{dpModel(f, dpboost.DPBoost, 3), dpModel(f, dpboost.Newton, 2)} {
		b, _ := proto.Marshal(wire.FinalDPBoost(m, nil))
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var fin wire.Final
		if proto.Unmarshal(data, &fin) == nil {
			if m, err := fin.ToBoostModel(); err == nil {
				m.Predict(make([]float64, len(m.Features)))
				if err := m.Write(io.Discard); err != nil {
					t.Fatalf("accepted model cannot be saved: %v", err)
				}
				w, err := wire.WCModelOf(m)
				if err != nil {
					t.Fatalf("accepted model does not encode: %v", err)
				}
				again, err := (&wire.Final{Model: &wire.Final_Wc{Wc: w}}).ToBoostModel()
				if err != nil || !reflect.DeepEqual(again, m) {
					t.Fatalf("second round trip: %v", err)
				}
			}
			if m, err := fin.ToDPBoostModel(); err == nil {
				m.Predict(make([]float64, len(m.Features)))
				if err := m.Write(io.Discard); err != nil {
					t.Fatalf("accepted model cannot be saved: %v", err)
				}
				again, err := wire.FinalDPBoost(m, nil).ToDPBoostModel()
				if err != nil || !reflect.DeepEqual(again, m) {
					t.Fatalf("second round trip: %v", err)
				}
			}
		}
		var l wire.Learner
		if proto.Unmarshal(data, &l) == nil {
			for _, shape := range [][2]int{{2, 20}, {3, 20}, {2, 1}} {
				if b, err := l.ToBase(shape[0], shape[1]); err == nil {
					if k := b.Predict(make([]float64, shape[1])); k < 0 || k >= shape[0] {
						t.Fatalf("accepted learner predicts class %d of %d", k, shape[0])
					}
				}
			}
		}
	})
}

// BenchmarkModelWireBytes reports the bytes of a model on the wire, typed
// protobuf (Final) against the JSON model file that Final carried before
// (json_B), for a W&C stump model and a DPBoost model:
//
//	go test -run XXX -bench ModelWireBytes ./protocol/wire
func BenchmarkModelWireBytes(b *testing.B) {
	for _, c := range []struct {
		name  string
		final func(testing.TB) (*wire.Final, []byte)
	}{
		{"wc-stump", func(tb testing.TB) (*wire.Final, []byte) {
			m := wcModel(tb, boost.Stump, 2)
			var js bytes.Buffer
			if err := m.Write(&js); err != nil {
				tb.Fatal(err)
			}
			f, err := wire.FinalWC(m, nil)
			if err != nil {
				tb.Fatal(err)
			}
			return f, js.Bytes()
		}},
		{"dpboost", func(tb testing.TB) (*wire.Final, []byte) {
			m := dpModel(tb, dpboost.DPBoost, 2)
			var js bytes.Buffer
			if err := m.Write(&js); err != nil {
				tb.Fatal(err)
			}
			return wire.FinalDPBoost(m, nil), js.Bytes()
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			f, js := c.final(b)
			var n int
			for range b.N {
				raw, err := proto.Marshal(f)
				if err != nil {
					b.Fatal(err)
				}
				n = len(raw)
			}
			b.ReportMetric(float64(n), "proto_B")
			b.ReportMetric(float64(len(js)), "json_B")
		})
	}
}

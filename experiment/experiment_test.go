package experiment

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotutil"
	"os"
	"path/filepath"
	"testing"
)

func TestMeanStd(t *testing.T) {
	m, s := MeanStd([]float64{1, 2, 3, 4})
	// mean 2.5; sample variance ((1.5²+0.5²)*2)/3 = 5/3.
	if m != 2.5 || math.Abs(s-math.Sqrt(5.0/3)) > 1e-15 {
		t.Fatalf("MeanStd = %v, %v", m, s)
	}
}

func TestOutputs(t *testing.T) {
	r := &Run{Out: t.TempDir()}
	if err := r.Table("t", []string{"a", "b"}, [][]string{{"1", F(0.5)}}); err != nil {
		t.Fatal(err)
	}
	if err := r.JSON("t", map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	f := Figure{Title: "x", X: "eps", Y: "acc", Series: []Series{
		{Name: "pm", X: []float64{1, 2, 3}, Y: []float64{.5, .6, math.NaN()}, Err: []float64{.01, .02, 0}},
		{Name: "paper", X: []float64{1, 3}, Y: []float64{.55, .7}, Dashed: true},
	}, ErrBars: sdBars(5, "seeds")}
	if err := r.Plot("p", f); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"t.csv", "t.json", "p.png", "p.svg"} {
		st, err := os.Stat(filepath.Join(r.Out, n))
		if err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", n, err)
		}
	}
	bad := Figure{Series: []Series{{Name: "x", X: []float64{1}, Y: nil}}}
	if err := r.Plot("bad", bad); err == nil {
		t.Fatal("mismatched series accepted")
	}
	f.ErrBars = ""
	if err := r.Plot("unexplained", f); err == nil {
		t.Fatal("error bars without a caption that says what they show were accepted")
	}
}

// TestStylesDistinct: no two series share a colour unless one names the
// other in ColorOf, no two share (colour, marker, dashes) at all, and two
// reference lines differ in dash pattern.
func TestStylesDistinct(t *testing.T) {
	var series []Series
	for i := range 60 {
		series = append(series, Series{Name: string(rune('a' + i))})
	}
	series = append(series, Series{Name: "paper a", ColorOf: "a", Dashed: true}, Series{Name: "majority", Dashed: true})
	st := styles(series)
	seen := map[string]int{}
	for i, s := range st {
		k := fmt.Sprint(s.color, s.shape, s.dashes)
		if j, ok := seen[k]; ok {
			t.Fatalf("series %q and %q are drawn alike: %s", series[j].Name, series[i].Name, k)
		}
		seen[k] = i
	}
	for i := range len(palette) {
		for j := range i {
			if st[i].color == st[j].color {
				t.Fatalf("series %d and %d share a colour within the first %d", i, j, len(palette))
			}
		}
	}
	if st[60].color != st[0].color || st[60].shape == st[0].shape {
		t.Fatal("a ColorOf series should take the named colour with a marker of its own")
	}
	for i := 1; i < markers; i++ {
		if st[i].shape == st[0].shape {
			t.Fatalf("series 0 and %d share a marker", i)
		}
	}
	if fmt.Sprint(st[60].dashes) == fmt.Sprint(st[61].dashes) {
		t.Fatal("two reference lines share a dash pattern")
	}
	// Negative control: the old scheme (plotutil's 7 colours by index)
	// gave series 0 and 7 one colour; the check above catches that.
	old := func(i int) color.Color { return plotutil.Color(i) }
	if old(0) != old(7) {
		t.Fatal("control: plotutil no longer repeats after 7; the test's premise changed")
	}
}

// TestShortRunMarked: a short run's plot says so in its title and caption.
func TestShortRunMarked(t *testing.T) {
	f := Figure{Title: "t", Series: []Series{{Name: "s", X: []float64{1, 2}, Y: []float64{1, 2}}}}
	p, _, err := f.build("x")
	if err != nil {
		t.Fatal(err)
	}
	_ = p
	long := wrapTitle(plot.New().Title.TextStyle, strings.Repeat("word ", 60), 300)
	if !strings.Contains(long, "\n") {
		t.Fatal("a title wider than the frame was not wrapped")
	}
	r := &Run{Out: t.TempDir(), Short: true}
	if err := r.Plot("s", f); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(r.Out, "s.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SHORT RUN", "the numbers mean nothing"} {
		if !strings.Contains(string(svg), want) {
			t.Fatalf("short-run plot lacks %q", want)
		}
	}
	r.Short = false
	if err := r.Plot("full", f); err != nil {
		t.Fatal(err)
	}
	if svg, _ := os.ReadFile(filepath.Join(r.Out, "full.svg")); strings.Contains(string(svg), "SHORT RUN") {
		t.Fatal("a full run's plot is marked short")
	}
}

// TestLogTicksLabelShortRanges: a log axis spanning under two decades gets
// labels at 1, 2 and 5 × 10^k (gonum's LogTicks labels only "1" on [0.6, 9],
// the control); a wider one keeps the powers of ten.
func TestLogTicksLabelShortRanges(t *testing.T) {
	// labels are the labelled ticks inside [lo, hi] (the axis shows no other).
	labels := func(ts func(lo, hi float64) []plot.Tick, lo, hi float64) string {
		var out []string
		for _, tk := range ts(lo, hi) {
			if tk.Label != "" && tk.Value >= lo && tk.Value <= hi {
				out = append(out, tk.Label)
			}
		}
		return fmt.Sprint(out)
	}
	ours, gonum := logTicks{}.Ticks, plot.LogTicks{Prec: -1}.Ticks
	if got := labels(ours, 0.6, 9); got != "[1 2 5]" {
		t.Fatalf("labels on [0.6, 9]: %s", got)
	}
	if got := labels(gonum, 0.6, 9); got != "[1]" {
		t.Fatalf("control: gonum labels %s on [0.6, 9]; the custom ticker may be unneeded", got)
	}
	if got := labels(ours, 0.1, 3); got != "[0.1 0.2 0.5 1 2]" {
		t.Fatalf("labels on [0.1, 3]: %s", got)
	}
	if got := labels(ours, 1, 1e5); got != "[1 10 100 1000 10000 100000]" {
		t.Fatalf("labels on [1, 1e5]: %s", got)
	}
	for _, r := range [][2]float64{{0.6, 9}, {0.04, 12}, {0.3, 3000}} {
		for _, tk := range ours(r[0], r[1]) {
			if tk.Value < r[0] || tk.Value > r[1] {
				t.Fatalf("tick %v outside [%v, %v]: its label would shrink the frame", tk.Value, r[0], r[1])
			}
		}
	}
}

package experiment

import (
	"math"
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
	}}
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
}

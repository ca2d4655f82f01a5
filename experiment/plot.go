package experiment

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Figure is a line plot: one line per series, with error bars where Err is set.
type Figure struct {
	Title, X, Y string
	LogX, LogY  bool
	Series      []Series
	// YMin and YMax, when YMax > YMin, fix the y range: lines are clipped
	// to it and points outside it are not drawn (say so in the caption).
	YMin, YMax float64
}

// Series is one line. Err, if set, is drawn as ±Err bars (usually the
// standard deviation over seeds).
type Series struct {
	Name    string
	X, Y    []float64
	Err     []float64
	Dashed  bool // reference lines (paper values, baselines)
	NoPoint bool
	// ColorOf names an earlier series whose color this one takes (a
	// paper's line beside the measured one).
	ColorOf string
}

// Plot writes name.png and name.svg.
func (r *Run) Plot(name string, f Figure) error {
	p := plot.New()
	p.Title.Text = f.Title
	p.X.Label.Text = f.X
	p.Y.Label.Text = f.Y
	if f.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if f.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	drawn := 0
	colors := map[string]color.Color{}
	for i, s := range f.Series {
		if len(s.X) != len(s.Y) || (s.Err != nil && len(s.Err) != len(s.Y)) {
			return fmt.Errorf("plot %s: series %q has %d x, %d y, %d err", name, s.Name, len(s.X), len(s.Y), len(s.Err))
		}
		pts := make(plotter.XYs, 0, len(s.X))
		errs := make(plotter.YErrors, 0, len(s.X))
		for j := range s.X {
			if math.IsNaN(s.Y[j]) || math.IsInf(s.Y[j], 0) || (f.LogX && !(s.X[j] > 0)) || (f.LogY && !(s.Y[j] > 0)) {
				continue // not drawable (a log axis has no place for it)
			}
			pts = append(pts, plotter.XY{X: s.X[j], Y: s.Y[j]})
			if s.Err != nil {
				e := s.Err[j]
				lo := e
				if f.LogY && s.Y[j]-lo <= 0 { // a log axis cannot show a bar below 0
					lo = s.Y[j] / 2
				}
				if math.IsNaN(e) {
					e, lo = 0, 0
				}
				errs = append(errs, struct{ Low, High float64 }{lo, e})
			}
		}
		if len(pts) == 0 {
			continue
		}
		drawn++
		line, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		c := plotutil.Color(i)
		line.Color = c
		line.Width = vg.Points(1.5)
		if s.Dashed {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			line.Color = color.Gray{Y: 90}
			if i > 0 {
				line.Color = c
			}
		}
		if c, ok := colors[s.ColorOf]; ok && s.ColorOf != "" {
			line.Color = c
		}
		colors[s.Name] = line.Color
		p.Add(line)
		p.Legend.Add(s.Name, line)
		if !s.NoPoint {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return fmt.Errorf("plot %s: %w", name, err)
			}
			sc.Color = line.Color
			sc.Shape = plotutil.Shape(i)
			p.Add(sc)
		}
		if s.Err != nil {
			eb, err := plotter.NewYErrorBars(struct {
				plotter.XYer
				plotter.YErrorer
			}{pts, errs})
			if err != nil {
				return fmt.Errorf("plot %s: %w", name, err)
			}
			eb.Color = line.Color
			p.Add(eb)
		}
	}
	// A log axis needs a positive range that is not a single point.
	for _, ax := range []struct {
		log bool
		a   *plot.Axis
	}{{f.LogX, &p.X}, {f.LogY, &p.Y}} {
		if ax.log && (ax.a.Min <= 0 || ax.a.Min >= ax.a.Max) {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, sr := range f.Series {
				vals := sr.Y
				if ax.a == &p.X {
					vals = sr.X
				}
				for _, v := range vals {
					if v > 0 && !math.IsInf(v, 0) {
						lo, hi = math.Min(lo, v), math.Max(hi, v)
					}
				}
			}
			if math.IsInf(lo, 1) {
				lo, hi = 1, 10
			}
			ax.a.Min, ax.a.Max = lo/2, hi*2
		}
	}
	if f.YMax > f.YMin {
		p.Y.Min, p.Y.Max = f.YMin, f.YMax
	}
	if drawn == 0 {
		// Nothing to show (every value NaN or, on a log axis, not positive):
		// a log scale without data cannot be drawn.
		p.X.Scale, p.Y.Scale = plot.LinearScale{}, plot.LinearScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.DefaultTicks{}, plot.DefaultTicks{}
	}
	for _, ext := range []string{".png", ".svg"} {
		path, err := r.path(name + ext)
		if err != nil {
			return err
		}
		if err := p.Save(6*vg.Inch, 4*vg.Inch, path); err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
	}
	return nil
}

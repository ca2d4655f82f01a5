package experiment

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Figure is a line plot: one line per series, with error bars where Err is set.
type Figure struct {
	Title, X, Y string
	LogX, LogY  bool
	Series      []Series
	// YMin and YMax, when YMax > YMin, fix the y range: lines are clipped
	// to it and points outside it are not drawn (the caption says so).
	YMin, YMax float64
	// ErrBars says what an error bar shows ("±1 sd over 5 seeds"). It is
	// printed in the caption and required when a series has Err.
	ErrBars string
	// Notes are further caption lines under the plot.
	Notes []string
}

// Series is one line. Err, if set, is drawn as ±Err bars (usually the
// standard deviation over seeds).
type Series struct {
	Name    string
	X, Y    []float64
	Err     []float64
	Dashed  bool // reference lines (baselines)
	NoPoint bool
	// PointsOnly draws markers and no line: values a paper reported where
	// it reported them (a line would invent a trend between them).
	PointsOnly bool
	// ColorOf names an earlier series whose color this one takes (a
	// paper's line beside the measured one).
	ColorOf string
}

// palette holds twelve colours that stay apart on white and for the
// common colour-vision deficiencies (Okabe-Ito first, then darker extras);
// no two series of a figure share one unless one names the other in
// ColorOf. Yellow is left out: it vanishes on white.
var palette = []color.Color{
	color.RGBA{0x00, 0x72, 0xB2, 0xFF}, // blue
	color.RGBA{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	color.RGBA{0x00, 0x9E, 0x73, 0xFF}, // bluish green
	color.RGBA{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
	color.RGBA{0xE6, 0x9F, 0x00, 0xFF}, // orange
	color.RGBA{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
	color.RGBA{0x00, 0x00, 0x00, 0xFF}, // black
	color.RGBA{0x8C, 0x56, 0x4B, 0xFF}, // brown
	color.RGBA{0x7F, 0x7F, 0x7F, 0xFF}, // grey
	color.RGBA{0x80, 0x80, 0x00, 0xFF}, // olive
	color.RGBA{0x6A, 0x3D, 0x9A, 0xFF}, // purple
	color.RGBA{0x17, 0x8E, 0x9E, 0xFF}, // teal
}

// markers is the number of marker shapes plotutil.Shape cycles through.
const markers = 7

// dashes are the patterns of reference lines, one per reference series in
// turn, so two references differ in pattern as well as colour.
var dashes = [][]vg.Length{
	{vg.Points(6), vg.Points(3)},
	{vg.Points(2), vg.Points(2)},
	{vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)},
	{vg.Points(3), vg.Points(5)},
}

// seriesStyle is how one series is drawn.
type seriesStyle struct {
	color  color.Color
	shape  int // index for plotutil.Shape
	dashes []vg.Length
}

// styles gives every series its colour, marker and dash pattern: the
// colours in palette order and the markers in plotutil's order, references
// dashed in turn, and ColorOf series in the colour of the series they name with a
// marker of their own.
func styles(series []Series) []seriesStyle {
	out := make([]seriesStyle, len(series))
	byName := map[string]int{}
	next, refs := 0, 0
	for i, s := range series {
		st := seriesStyle{}
		if j, ok := byName[s.ColorOf]; ok && s.ColorOf != "" {
			st.color = out[j].color
			st.shape = (out[j].shape + 1) % markers
		} else {
			// Colour and marker both advance, so (colour, marker) pairs
			// repeat only after lcm(12, 7) = 84 series.
			st.color = palette[next%len(palette)]
			st.shape = next % markers
			next++
		}
		if s.Dashed {
			st.dashes = dashes[refs%len(dashes)]
			refs++
		}
		if _, dup := byName[s.Name]; !dup {
			byName[s.Name] = i
		}
		out[i] = st
	}
	return out
}

// Page geometry: the plot frame, the legend column to its right and the
// caption lines under it, all inside a margin so no title, glyph or end
// point touches the image border.
const (
	figWidth    = 8.5 * vg.Inch
	figHeight   = 4.5 * vg.Inch
	figMargin   = 10   // points
	captionSize = 10   // points
	legendMax   = 0.42 // of the width, at most
)

// Plot writes name.png and name.svg: the frame with the title inside it,
// the legend in a column of its own beside the frame (never over a line),
// the axes padded so end points and their error bars are whole, and a
// caption that says what the error bars are, where the y range is clipped,
// and, in a short run, that the numbers mean nothing.
func (r *Run) Plot(name string, f Figure) error {
	p, legend, err := f.build(name)
	if err != nil {
		return err
	}
	caption := f.caption()
	title := f.Title
	if r.Short {
		title = "SHORT RUN (not a result): " + title
		caption = append([]string{"Short run (--short): tiny sizes for testing; the numbers mean nothing."}, caption...)
	}
	capStyle := p.Title.TextStyle
	capStyle.Font = font.From(plot.DefaultFont, captionSize)
	capStyle.XAlign, capStyle.YAlign = draw.XLeft, draw.YBottom
	lineH := capStyle.Rectangle("Mg").Size().Y * 1.25
	height := figHeight + vg.Length(len(caption))*lineH
	for _, ext := range []string{"png", "svg"} {
		path, err := r.path(name + "." + ext)
		if err != nil {
			return err
		}
		c, err := draw.NewFormattedCanvas(figWidth, height, ext)
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		dc := draw.New(c)
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		m := vg.Points(figMargin)
		inner := draw.Crop(dc, m, -m, m, -m)
		// The legend column.
		lw := legendWidth(legend, inner)
		if lw > 0 {
			lc := draw.Crop(inner, inner.Size().X-lw, 0, vg.Length(len(caption))*lineH, -vg.Points(22))
			legend.Draw(lc)
		}
		// The caption, one line each, from the bottom up.
		for i, line := range caption {
			y := inner.Min.Y + vg.Length(len(caption)-1-i)*lineH
			inner.FillText(capStyle, vg.Point{X: inner.Min.X, Y: y}, line)
		}
		frame := draw.Crop(inner, 0, -lw, vg.Length(len(caption))*lineH+vg.Points(4), 0)
		p.Title.Text = wrapTitle(p.Title.TextStyle, title, frame.Size().X)
		drawFrame(p, frame, f.LogX)
		file, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		if _, err := c.WriteTo(file); err != nil {
			file.Close()
			return fmt.Errorf("plot %s: %w", path, err)
		}
		if err := file.Close(); err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
	}
	return nil
}

// legendWidth is the width of the legend column (with a gap before it), at
// most legendMax of the canvas; 0 without entries.
func legendWidth(l *plot.Legend, c draw.Canvas) vg.Length {
	r := l.Rectangle(c)
	w := r.Size().X
	if w == 0 {
		return 0
	}
	w += vg.Points(12)
	if max := vg.Length(legendMax) * c.Size().X; w > max {
		w = max
	}
	return w
}

// wrapTitle breaks a title that does not fit the frame's width into lines at
// spaces, so it is never cut at the sides.
func wrapTitle(sty draw.TextStyle, title string, width vg.Length) string {
	if sty.Rectangle(title).Size().X <= width {
		return title
	}
	var lines []string
	cur := ""
	for _, w := range strings.Fields(title) {
		try := strings.TrimSpace(cur + " " + w)
		if cur != "" && sty.Rectangle(try).Size().X > width {
			lines = append(lines, cur)
			cur = w
			continue
		}
		cur = try
	}
	return strings.Join(append(lines, cur), "\n")
}

// caption is the figure's caption lines.
func (f Figure) caption() []string {
	var out []string
	if f.ErrBars != "" {
		out = append(out, "Error bars: "+f.ErrBars+".")
	}
	if f.YMax > f.YMin {
		out = append(out, fmt.Sprintf("The y axis is limited to [%g, %g]; points outside it are not drawn.", f.YMin, f.YMax))
	}
	return append(out, f.Notes...)
}

// build makes the plot (without its legend, which Plot draws beside it) and
// the legend.
func (f Figure) build(name string) (*plot.Plot, *plot.Legend, error) {
	p := f.newPlot()
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.ThumbnailWidth = vg.Points(26)
	legend.TextStyle.Font = font.From(plot.DefaultFont, 10)
	hasErr := false
	drawn := 0
	st := styles(f.Series)
	for i, s := range f.Series {
		if len(s.X) != len(s.Y) || (s.Err != nil && len(s.Err) != len(s.Y)) {
			return nil, nil, fmt.Errorf("plot %s: series %q has %d x, %d y, %d err", name, s.Name, len(s.X), len(s.Y), len(s.Err))
		}
		hasErr = hasErr || s.Err != nil
		pts, errs := f.drawable(s)
		if len(pts) == 0 {
			continue
		}
		drawn++
		if err := addSeries(p, &legend, s, st[i], pts, errs); err != nil {
			return nil, nil, fmt.Errorf("plot %s: %w", name, err)
		}
	}
	if hasErr && f.ErrBars == "" {
		return nil, nil, fmt.Errorf("plot %s: a series has error bars but Figure.ErrBars does not say what they show", name)
	}
	if drawn == 0 {
		// Nothing to show (every value NaN or, on a log axis, not positive):
		// a log scale without data cannot be drawn.
		p.X.Scale, p.Y.Scale = plot.LinearScale{}, plot.LinearScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.DefaultTicks{}, plot.DefaultTicks{}
		return p, &legend, nil
	}
	pad(&p.X, f.LogX, f.Series, true)
	if f.YMax > f.YMin {
		p.Y.Min, p.Y.Max = f.YMin, f.YMax
	} else {
		pad(&p.Y, f.LogY, f.Series, false)
	}
	return p, &legend, nil
}

// newPlot is the empty plot: title, axis labels and scales, grid.
func (f Figure) newPlot() *plot.Plot {
	p := plot.New()
	p.Title.Text = f.Title
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = f.X
	p.Y.Label.Text = f.Y
	if f.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
	}
	if f.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
	}
	p.Add(plotter.NewGrid())
	return p
}

// drawable is a series' points that the axes can show (finite, and
// positive on a log axis) and their error bars (a bar that would reach
// below 0 on a log y axis is cut to half the value; a NaN bar is none).
func (f Figure) drawable(s Series) (plotter.XYs, plotter.YErrors) {
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
	return pts, errs
}

// addSeries draws one series (its line, its markers unless NoPoint, its
// error bars) in style st and adds it to the legend.
func addSeries(p *plot.Plot, legend *plot.Legend, s Series, st seriesStyle, pts plotter.XYs, errs plotter.YErrors) error {
	if s.PointsOnly {
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.Color, sc.Shape, sc.Radius = st.color, plotutil.Shape(st.shape), vg.Points(4)
		p.Add(sc)
		legend.Add(s.Name, sc)
		return nil
	}
	line, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	line.Color = st.color
	line.Width = vg.Points(1.5)
	line.Dashes = st.dashes
	p.Add(line)
	thumbs := []plot.Thumbnailer{line}
	if !s.NoPoint {
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.Color = line.Color
		sc.Shape = plotutil.Shape(st.shape)
		sc.Radius = vg.Points(3)
		p.Add(sc)
		thumbs = append(thumbs, sc)
	}
	legend.Add(s.Name, thumbs...)
	if s.Err != nil {
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYer
			plotter.YErrorer
		}{pts, errs})
		if err != nil {
			return err
		}
		eb.Color = line.Color
		p.Add(eb)
	}
	return nil
}

// padFrac is how much of the data range is added on each side of an axis,
// so the first and last points (and their markers) sit inside the frame.
const padFrac = 0.04

// pad widens an axis around its data: by padFrac of the range on a linear
// axis, by padFrac of the decades on a log one (whose range must also be
// positive).
func pad(a *plot.Axis, log bool, series []Series, isX bool) {
	if log && (a.Min <= 0 || a.Min >= a.Max) {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, sr := range series {
			vals := sr.Y
			if isX {
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
		if lo == hi {
			lo, hi = lo/2, hi*2
		}
		a.Min, a.Max = lo, hi
	}
	if log {
		k := math.Pow(a.Max/a.Min, padFrac)
		a.Min, a.Max = a.Min/k, a.Max*k
		return
	}
	d := (a.Max - a.Min) * padFrac
	if d == 0 {
		d = math.Max(math.Abs(a.Max)*padFrac, 0.5)
	}
	a.Min, a.Max = a.Min-d, a.Max+d
}

// sdBars is the caption of error bars that show one sample standard
// deviation (MeanStd's) over n runs.
func sdBars(n int, runs string) string {
	if n < 2 {
		return "none (a single run)"
	}
	return fmt.Sprintf("±1 sample sd over %d %s", n, runs)
}

// logTicks labels a log axis at 1, 2 and 5 times the powers of ten when it
// spans under two decades (gonum's LogTicks then labels one tick or none),
// and at the powers of ten, with unlabelled minor ticks, when it spans more;
// never outside [lo, hi].
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	}
	if math.Log10(hi/lo) >= 2 {
		// gonum also returns ticks outside [lo, hi]; their labels' glyph
		// boxes made the frame shrink away from the legend column.
		var in []plot.Tick
		for _, t := range (plot.LogTicks{Prec: -1}).Ticks(lo, hi) {
			if t.Value >= lo && t.Value <= hi {
				in = append(in, t)
			}
		}
		return in
	}
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, e)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// drawFrame draws the plot in frame. On a log x axis it draws the axis label
// itself, centred under the data area: gonum places that label's glyph box
// at the arithmetic mean of the axis range, far right on a log scale, and
// shrank the frame away from the legend column to make room for it.
func drawFrame(p *plot.Plot, frame draw.Canvas, logX bool) {
	label := p.X.Label.Text
	if !logX || label == "" {
		p.Draw(frame)
		return
	}
	p.X.Label.Text = ""
	defer func() { p.X.Label.Text = label }()
	sty := p.X.Label.TextStyle
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YBottom
	h := sty.Height(label) + p.X.Label.Padding
	body := draw.Crop(frame, 0, 0, h, 0)
	p.Draw(body)
	da := p.DataCanvas(body)
	frame.FillText(sty, vg.Point{X: da.Center().X, Y: frame.Min.Y}, label)
}

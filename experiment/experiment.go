package experiment

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Spec is one registered experiment.
type Spec struct {
	// Name is the command-line name: lowercase, dash-separated, prefixed by
	// the system ("wc-", "dpboost-", "pfds-").
	Name string
	// Paper names the figure or table it reproduces ("Wang & Chang 2021, Fig. 4c").
	Paper string
	// Summary is one line for `ppboost experiment list`.
	Summary string
	// Run computes and writes the experiment's outputs.
	Run func(r *Run) error
}

var (
	regMu    sync.Mutex
	registry = map[string]Spec{}
)

// Register adds an experiment; call it from an init function. It panics on a
// duplicate or malformed name (a programming error).
func Register(s Spec) {
	regMu.Lock()
	defer regMu.Unlock()
	if s.Name == "" || s.Run == nil {
		panic("experiment: Register needs a name and a Run function")
	}
	if _, dup := registry[s.Name]; dup {
		panic("experiment: registered twice: " + s.Name)
	}
	registry[s.Name] = s
}

// List returns every registered experiment sorted by name.
func List() []Spec {
	regMu.Lock()
	defer regMu.Unlock()
	out := make([]Spec, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup finds an experiment by name.
func Lookup(name string) (Spec, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	s, ok := registry[name]
	return s, ok
}

// Run is what an experiment gets: where to write, which seeds, how big.
type Run struct {
	// Out is the directory outputs are written to (created if missing).
	Out string
	// Seeds are the repetitions; experiments report mean and spread over them.
	Seeds []uint64
	// Short asks for tiny sizes: the test suite runs every experiment this
	// way so none rots. Numbers from a short run mean nothing.
	Short bool
	// Protocol runs the full protocol over the in-memory network instead of
	// the one-process reference trainer, where an experiment supports it.
	Protocol bool
	// Log receives human-readable progress lines; Progress draws a bar.
	Log      io.Writer
	Progress *Progress
}

// Logf writes one progress line.
func (r *Run) Logf(format string, a ...any) {
	if r.Log != nil {
		fmt.Fprintf(r.Log, format+"\n", a...)
	}
}

// path is name inside Out; name may have directories ("wc/ncc-eps"), which
// are created.
func (r *Run) path(name string) (string, error) {
	p := filepath.Join(r.Out, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("experiment output directory %s: %w", filepath.Dir(p), err)
	}
	return p, nil
}

// Table writes name.csv with a header line and rows.
func (r *Run) Table(name string, header []string, rows [][]string) error {
	p, err := r.path(name + ".csv")
	if err != nil {
		return err
	}
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(header)
	_ = w.WriteAll(rows)
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", p, err)
	}
	return f.Close()
}

// JSON writes name.json, indented.
func (r *Run) JSON(name string, v any) error {
	p, err := r.path(name + ".json")
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return os.WriteFile(p, append(b, '\n'), 0o644)
}

// F formats a number for a table cell.
func F(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// MeanStd returns the mean and the sample standard deviation (0 for fewer
// than two values).
func MeanStd(v []float64) (mean, std float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v)-1))
}

// Progress is a terminal progress bar. A nil *Progress does nothing.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	label string
	total int
	done  int
	start time.Time
}

// NewProgress draws on w (usually standard error).
func NewProgress(w io.Writer) *Progress { return &Progress{w: w} }

// Start begins a bar of total steps.
func (p *Progress) Start(label string, total int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.label, p.total, p.done, p.start = label, total, 0, time.Now()
	p.draw()
	p.mu.Unlock()
}

// Step advances the bar by one.
func (p *Progress) Step() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.done++
	p.draw()
	if p.done >= p.total {
		fmt.Fprintln(p.w)
	}
	p.mu.Unlock()
}

func (p *Progress) draw() {
	const width = 30
	if p.total <= 0 {
		return
	}
	n := width * p.done / p.total
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = '.'
		if i < n {
			bar[i] = '#'
		}
	}
	fmt.Fprintf(p.w, "\r%-24s [%s] %d/%d %s", p.label, bar, p.done, p.total, time.Since(p.start).Round(time.Second))
}

// sub is the run with its outputs in the subdirectory dir of Out (and every
// other setting, Short among them, kept).
func (r *Run) sub(dir string) *Run {
	c := *r
	c.Out = filepath.Join(r.Out, dir)
	return &c
}

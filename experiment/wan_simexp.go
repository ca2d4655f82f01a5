package experiment

// The simulated internet as an experiment: testing/synctest's bubbles
// need a *testing.T, so `ppboost experiment wan-sim` runs its cases in a
// child process, the running binary re-executed with wanSimChildEnv naming
// a file of cases; the child (WANChild) runs them under testing.Main, one
// bubble per case, and writes the results beside the file. The parent
// writes the table and the plots.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
)

// wanSimChildEnv names, in a child's environment, the JSON file of the
// cases it runs (wanSimJob); it writes the results to the file + ".out".
const wanSimChildEnv = "PPBOOST_WANSIM_CHILD"

type wanSimJob struct {
	Seed  uint64    `json:"seed"`
	Cases []wanCase `json:"cases"`
}

type wanSimOut struct {
	Results []wanResult `json:"results"`
	Wall    []float64   `json:"wall_seconds"` // per case
	Err     string      `json:"err,omitempty"`
}

func init() {
	Register(Spec{
		Name:  "wan-sim",
		Paper: "issue 31: a simulated internet in virtual time",
		Summary: "secure sums, W&C and federated Newton sessions among QUIC hosts on a simulated internet (simnet, testing/synctest): " +
			"20 and 200 owners at 0, 50 and 100 ms one way, and 100 ms with 20 ms jitter or 1% loss; extra one-way delays against each bound",
		Run: func(r *Run) error { return runWANSim(r, "wan-sim", wanSimGrid(r.Short, false)) },
	})
	Register(Spec{
		Name:    "wan-sim-1000",
		Paper:   "issue 31: 1,000 owners on the simulated internet",
		Summary: "wan-sim's Shamir sums and sessions among 1,000 owners at 100 ms one way (about an hour of wall time)",
		Run:     func(r *Run) error { return runWANSim(r, "wan-sim-1000", wanSimGrid(r.Short, true)) },
	})
}

// wanSimGrid is wan-sim's cases (big: the 1,000-owner ones).
func wanSimGrid(short, big bool) []wanCase {
	sim := func(n int, m string, d time.Duration) wanCase {
		c := wanCase{Transport: "quic", Owners: n, Method: m, Delay: d, Sim: true}
		switch m {
		case securesum.Shamir:
			c.Warm = 3
		case wanSessionMethod:
			c.Rounds = 3
		case wanFedMethod:
			c.Rounds = wanFedTrees
		}
		return c
	}
	if short {
		return []wanCase{sim(6, securesum.Shamir, 0), sim(6, securesum.Shamir, 50*time.Millisecond)}
	}
	if big {
		return []wanCase{sim(1000, securesum.Shamir, 100*time.Millisecond), sim(1000, wanSessionMethod, 100*time.Millisecond),
			sim(1000, wanFedMethod, 100*time.Millisecond)}
	}
	var out []wanCase
	for _, n := range []int{20, 200} {
		for _, d := range []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond} {
			out = append(out, sim(n, securesum.Shamir, d))
		}
		j := sim(n, securesum.Shamir, 100*time.Millisecond)
		j.Jitter = 20 * time.Millisecond
		l := sim(n, securesum.Shamir, 100*time.Millisecond)
		l.Loss = 0.01
		out = append(out, j, l)
		for _, m := range []string{wanSessionMethod, wanFedMethod} {
			out = append(out, sim(n, m, 100*time.Millisecond))
		}
	}
	return out
}

// runWANSim runs grid in a child process and writes wan/NAME.csv, .json and
// the plots.
func runWANSim(r *Run, name string, grid []wanCase) error {
	seed := uint64(1)
	if len(r.Seeds) > 0 {
		seed = r.Seeds[0]
	}
	dir, err := os.MkdirTemp("", "ppboost-wansim-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	job := filepath.Join(dir, "cases.json")
	b, err := json.Marshal(wanSimJob{Seed: seed, Cases: grid})
	if err != nil {
		return err
	}
	if err := os.WriteFile(job, b, 0o600); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	r.Logf("wan-sim: %d cases in a child process (virtual time)", len(grid))
	start := time.Now()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), wanSimChildEnv+"="+job)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	runErr := cmd.Run()
	var out wanSimOut
	b, err = os.ReadFile(job + ".out")
	if err != nil {
		return fmt.Errorf("wan-sim child (%v): %w", runErr, err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Errorf("wan-sim child's results: %w", err)
	}
	if out.Err != "" || runErr != nil {
		return fmt.Errorf("wan-sim child: %s (%v)", out.Err, runErr)
	}
	for i, res := range out.Results {
		r.Logf("%s (%.0f s of wall time)", wanSimLogLine(res), out.Wall[i])
	}
	return wanSimWrite(r, name, seed, time.Since(start).Seconds(), out.Results)
}

// wanSimChild is the child's life: run the job named by path under
// testing.Main, one synctest bubble per case, and write the results.
func wanSimChild(path string) int {
	var job wanSimJob
	var out wanSimOut
	write := func() int {
		b, _ := json.Marshal(out)
		if err := os.WriteFile(path+".out", b, 0o600); err != nil {
			fmt.Fprintf(os.Stderr, "wan-sim child: %v\n", err)
			return 1
		}
		if out.Err != "" {
			return 1
		}
		return 0
	}
	// libp2p's and simnet's own logs (a listener closed at the end of
	// each case, say) would drown the progress lines.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &job)
	}
	if err != nil {
		out.Err = err.Error()
		return write()
	}
	test := func(t *testing.T) {
		defer write() // also after a t.Fatal
		for i, c := range job.Cases {
			start := time.Now()
			var res wanResult
			var err error
			synctest.Test(t, func(*testing.T) { res, err = runWANCase(context.Background(), c, job.Seed+uint64(i)*1000, nil) })
			if err != nil {
				out.Err = fmt.Sprintf("case %d (%d owners, %s, %v): %v", i, c.Owners, c.Method, c.Delay, err)
				t.Fatal(out.Err)
			}
			out.Results, out.Wall = append(out.Results, res), append(out.Wall, time.Since(start).Seconds())
			fmt.Fprintf(os.Stderr, "wan-sim: case %d/%d done in %.0f s\n", i+1, len(job.Cases), time.Since(start).Seconds())
		}
	}
	// testing.Main runs the test and ends the process with its status.
	os.Args = []string{os.Args[0], "-test.run=^WANSim$"}
	testing.Main(regexp.MatchString, []testing.InternalTest{{Name: "WANSim", F: test}}, nil, nil)
	return 0 // not reached
}

// wanSimRow is one line of wan-sim's table: one kind of step (sum, W&C
// attempt, federated tree) of one case, its median time in virtual
// seconds and in one-way delays beside the bound.
type wanSimRow struct {
	Owners   int     `json:"owners"`
	Method   string  `json:"method"`
	Kind     string  `json:"kind"`
	DelayMS  float64 `json:"delay_ms"`
	JitterMS float64 `json:"jitter_ms"`
	Loss     float64 `json:"loss"`
	Steps    int     `json:"steps"`
	Seconds  float64 `json:"seconds"`     // median
	Max      float64 `json:"max_seconds"` // the slowest
	Delays   float64 `json:"delays"`      // median / delay (NaN at 0 ms)
	Bound    int     `json:"bound_delays"`
	Failed   int     `json:"failed"`
	Excluded int     `json:"dealers_excluded"`
	Dup      int     `json:"duplicate_conn_ends"` // the most after any step
	Wire     float64 `json:"wire_bytes_per_owner"`
}

func wanSimRows(results []wanResult) []wanSimRow {
	var out []wanSimRow
	for _, r := range results {
		var kinds []string
		for _, s := range r.Sums {
			if !slices.Contains(kinds, s.Kind) {
				kinds = append(kinds, s.Kind)
			}
		}
		for _, kind := range kinds {
			w := wanSimRow{Owners: r.Owners, Method: r.Method, Kind: kind, DelayMS: float64(r.Delay) / 1e6,
				JitterMS: float64(r.Jitter) / 1e6, Loss: r.Loss, Bound: wanBound(r.Method, r.Owners)}
			if kind == "session-roster" || kind == "fed-config" {
				// The roster (the configuration) out and the acks
				// back; its wire is the user's (to the tree's first
				// owners), not an owner's.
				w.Bound = wanRosterBound(r.Method, r.Owners)
			}
			var secs, wire []float64
			for _, s := range r.Sums {
				if s.Kind != kind {
					continue
				}
				if s.Err != "" {
					w.Failed++
				} else if s.Parties < r.Owners {
					w.Excluded = max(w.Excluded, r.Owners-s.Parties)
				}
				secs, wire = append(secs, s.Seconds), append(wire, s.WireBytes)
				w.Max, w.Dup = max(w.Max, s.Seconds), max(w.Dup, s.DupConnEnds)
			}
			w.Steps, w.Seconds, w.Wire = len(secs), median(secs), median(wire)
			w.Delays = math.NaN()
			if r.Delay > 0 {
				w.Delays = w.Seconds / r.Delay.Seconds()
			}
			out = append(out, w)
		}
	}
	return out
}

func wanSimLogLine(res wanResult) string {
	line := fmt.Sprintf("wan-sim n=%-4d %-10s d=%-6v jitter=%-5v loss=%-4g", res.Owners, res.Method, res.Delay, res.Jitter, res.Loss)
	for _, w := range wanSimRows([]wanResult{res}) {
		line += fmt.Sprintf(" | %s x%d: median %.3f s = %.1f delays (bound %d), %d failed, %d excluded, %d dup ends",
			w.Kind, w.Steps, w.Seconds, w.Delays, w.Bound, w.Failed, w.Excluded, w.Dup)
	}
	return line
}

func wanSimWrite(r *Run, name string, seed uint64, wall float64, results []wanResult) error {
	rows := wanSimRows(results)
	header := []string{"owners", "method", "kind", "delay_ms", "jitter_ms", "loss", "steps", "seconds_median", "seconds_max",
		"delays_median", "bound_delays", "failed", "dealers_excluded", "duplicate_conn_ends", "wire_bytes_per_owner"}
	var cells [][]string
	for _, w := range rows {
		cells = append(cells, []string{fmt.Sprint(w.Owners), w.Method, w.Kind, F(w.DelayMS), F(w.JitterMS), F(w.Loss), fmt.Sprint(w.Steps),
			F(w.Seconds), F(w.Max), F(w.Delays), fmt.Sprint(w.Bound), fmt.Sprint(w.Failed), fmt.Sprint(w.Excluded), fmt.Sprint(w.Dup), F(w.Wire)})
	}
	if err := r.Table("wan/"+name, header, cells); err != nil {
		return err
	}
	js := make([]map[string]any, len(rows))
	for i, w := range rows {
		js[i] = map[string]any{"owners": w.Owners, "method": w.Method, "kind": w.Kind, "delay_ms": w.DelayMS, "jitter_ms": w.JitterMS,
			"loss": w.Loss, "steps": w.Steps, "seconds": w.Seconds, "max_seconds": w.Max, "delays": nullFloat(w.Delays),
			"bound_delays": w.Bound, "failed": w.Failed, "dealers_excluded": w.Excluded, "duplicate_conn_ends": w.Dup, "wire_bytes_per_owner": w.Wire}
	}
	if err := r.JSON("wan/"+name, map[string]any{"short": r.Short, "seed": seed, "wall_seconds": wall,
		"note": "virtual time (testing/synctest): CPU costs nothing, so seconds/delay is the latency in one-way delays; bounds: Shamir 5, W&C attempt 5, Newton tree 5 (experiment/wan*.go)",
		"rows": js, "cases": results}); err != nil {
		return err
	}
	return wanSimPlot(r, name, rows)
}

// wanSimPlot draws the median step of each method and kind, in one-way
// delays, against the owners, for each latency case (delay, jitter,
// loss), with the goals (3x the bound for a first step, 1.5x after).
func wanSimPlot(r *Run, name string, rows []wanSimRow) error {
	tag := ""
	if r.Short {
		tag = " (SHORT RUN: numbers mean nothing)"
	}
	f := Figure{Title: "simulated internet: median step in one-way delays, by owners" + tag, X: "owners", Y: "one-way delays", LogX: true}
	series := map[string]*Series{}
	var ns []float64
	var order []string
	for _, w := range rows {
		if w.DelayMS == 0 || w.Failed > 0 {
			continue
		}
		label := fmt.Sprintf("%s %s %gms", w.Method, w.Kind, w.DelayMS)
		if w.JitterMS > 0 {
			label += fmt.Sprintf(" ±%gms", w.JitterMS)
		}
		if w.Loss > 0 {
			label += fmt.Sprintf(" loss %g%%", 100*w.Loss)
		}
		s, ok := series[label]
		if !ok {
			s = &Series{Name: label}
			series[label] = s
			order = append(order, label)
		}
		s.X, s.Y = append(s.X, float64(w.Owners)), append(s.Y, w.Delays)
		if !slices.Contains(ns, float64(w.Owners)) {
			ns = append(ns, float64(w.Owners))
		}
	}
	if len(order) == 0 {
		return errors.New("wan-sim: no row to plot")
	}
	for _, l := range order {
		f.Series = append(f.Series, *series[l])
	}
	slices.Sort(ns)
	f.Series = append(f.Series, wanLine("goal warm 1.5 x 5", ns, 7.5), wanLine("goal first 3 x 5", ns, 15))
	return r.Plot("wan/"+name, f)
}

// wanTreeLevel is what a level of the roster tree below the user's costs
// in one-way delays before its bytes' transfer: a fresh QUIC connection (a
// round trip, then the first data: 3 delays) and identify, which a new
// stream waits for (a round trip).
const wanTreeLevel = 5

// wanRosterBound is the latency bound, in one-way delays, of the W&C
// roster's distribution and of the federated configuration's (the same
// tree, protocol.TreeFanout): the chunks out and the acks back (2), and
// for every level of the tree below the first (session.RosterTreeDepth),
// a fresh connection from a forwarding owner to its children
// (wanTreeLevel). An owner acks once the connections of its first sums
// are open (the W&C RosterAck, the federated configuration's): one more
// fresh connection.
func wanRosterBound(method string, owners int) int {
	if method == wanSessionMethod || method == wanFedMethod {
		return 2 + wanTreeLevel*session.RosterTreeDepth(owners)
	}
	return 2
}

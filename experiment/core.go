package experiment

import (
	"fmt"
	"runtime"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/simulate"
)

// core-scale measures the full protocol (real owner and user state machines,
// Shamir sums) over the in-memory network as the number of owners grows,
// with one newly silent owner before every secure sum: wall time, peak heap,
// traffic per owner and the model's accuracy.
func init() {
	Register(Spec{
		Name:    "core-scale",
		Paper:   "ppboost (issue: messages independent of the owner count)",
		Summary: "full protocol, Shamir sums, one silent owner per sum: 10^3..10^5 owners, 1,000 per round",
		Run:     runCoreScale,
	})
}

func runCoreScale(r *Run) error {
	sizes := []int{1000, 10000, 100000}
	per, rounds := 1000, 8 // 10,000 owners hold 8 rounds and the 2 dropped attempts the plan check wants room for
	if r.Short {
		sizes, per, rounds = []int{100}, 10, 2
	}
	seed := uint64(1)
	if len(r.Seeds) > 0 {
		seed = r.Seeds[0]
	}
	header := []string{"owners", "owners_per_round", "rounds", "wall_s", "peak_heap_mib", "msgs_per_owner", "bytes_per_owner",
		"virtual_s", "test_accuracy", "owners_killed", "error"}
	var rows [][]string
	var xs, wall, heap []float64
	r.Progress.Start("core-scale", len(sizes))
	for _, n := range sizes {
		cfg := boost.DefaultConfig()
		cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = per, rounds, seed
		// The secure sums are what this measures: err_m from the owners'
		// noisy err sum (err eps 1 per dealing; the default 0.5 is refused
		// by the plan check below 2*10^4 owners).
		cfg.Alpha, cfg.ErrEpsilon = boost.AlphaSecureSum, 1
		data, err := boost.Prepare(boost.DataSpec{Source: "synthetic", Owners: n, SamplesPerOwner: 80, Seed: seed}, cfg, nil)
		if err != nil {
			return err
		}
		p := securesum.DefaultParams()
		res, runErr := simulate.Run(simulate.Options{Boost: cfg, Sum: p, Data: data, SilentPerRound: 1})
		if res == nil {
			return runErr
		}
		acc := 0.0
		if res.Model != nil && len(res.Model.Rounds) > 0 {
			ev, err := boost.Evaluate(data.Test.X, data.Test.Y, res.Model.Classes, res.Model.Predict)
			if err == nil {
				acc = ev.Accuracy
			}
		}
		killed := 0
		for _, k := range res.Killed {
			if k {
				killed++
			}
		}
		errText := ""
		if runErr != nil {
			errText = runErr.Error()
		}
		rows = append(rows, []string{fmt.Sprint(n), fmt.Sprint(per), fmt.Sprint(rounds), F(res.Wall.Seconds()),
			fmt.Sprint(res.PeakHeap >> 20), F(res.OwnerMsgs), F(res.OwnerBytes), F(res.Virtual.Seconds()), F(acc),
			fmt.Sprint(killed), errText})
		r.Logf("%d owners: wall %v, peak heap %d MiB, %.0f msgs and %.0f bytes per owner, accuracy %.4f %s",
			n, res.Wall.Round(time.Second), res.PeakHeap>>20, res.OwnerMsgs, res.OwnerBytes, acc, errText)
		xs = append(xs, float64(n))
		wall = append(wall, res.Wall.Seconds())
		heap = append(heap, float64(res.PeakHeap)/(1<<20))
		data = boost.Data{}
		runtime.GC()
		r.Progress.Step()
	}
	if err := r.Table("core-scale", header, rows); err != nil {
		return err
	}
	if err := r.Plot("core-scale-wall", Figure{Title: "Full protocol over the in-memory network", X: "owners", Y: "wall time (s)",
		LogX: true, LogY: true, Series: []Series{{Name: "wall time", X: xs, Y: wall}}}); err != nil {
		return err
	}
	return r.Plot("core-scale-heap", Figure{Title: "Full protocol over the in-memory network", X: "owners", Y: "peak heap (MiB)",
		LogX: true, LogY: true, Series: []Series{{Name: "peak heap", X: xs, Y: heap}}})
}

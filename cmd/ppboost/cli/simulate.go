package cli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
	"github.com/ppboost/ppboost/protocol/simulate"
)

func runSimulate(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("simulate", "simulate [flags]  (full protocol over the in-memory network)", errOut)
	var tf trainFlags
	tf.register(fs)
	def := securesum.DefaultParams()
	method := fs.String("securesum", "shamir", "secure-sum method: ring | shamir")
	threshold := fs.Int("threshold", def.Threshold, "Shamir threshold t (shares needed to reconstruct)")
	committee := fs.Int("committee", def.Committee, "Shamir committee size c (all parties when fewer)")
	delay := fs.Duration("delay", time.Millisecond, "virtual one-way link latency")
	silent := fs.Int("silent-per-round", 0, "owners killed after every round attempt (each secure sum then meets newly silent owners)")
	drop := fs.Float64("drop", 0, "probability that any message is lost")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *silent < 0 || !(*drop >= 0 && *drop < 1) {
		return usagef("--silent-per-round must be >= 0 and --drop in [0, 1), got %d and %v", *silent, *drop)
	}
	p := def
	p.Method, p.Threshold, p.Committee = *method, *threshold, *committee
	if err := p.Validate(); err != nil {
		return usageError{err}
	}
	cfg, data, err := tf.prepare(fs, errOut)
	if err != nil {
		return err
	}
	if err := tf.refuseHopeless(cfg, data); err != nil {
		return err
	}
	start := time.Now()
	rep := newReport(out, errOut, tf.json, cfg, data, tf.data)
	res, runErr := simulate.Run(simulate.Options{Boost: cfg, Sum: p, Data: data, Delay: *delay,
		SilentPerRound: *silent, DropRate: *drop,
		OnRound: func(r session.RoundReport) { rep.round(r.RoundInfo) }})
	if res == nil || res.Model == nil {
		return runErr
	}
	if errors.Is(runErr, boost.ErrNoRetryRoom) {
		return usageError{runErr} // refused before anyone spent; the error says what would work
	}
	rep.Extra = map[string]any{
		"securesum":                    fmt.Sprintf("%s (t=%d (0 = majority), c=%d)", p.Method, p.Threshold, p.Committee),
		"owners killed":                countTrue(res.Killed),
		"messages per owner":           fmt.Sprintf("%.1f", res.OwnerMsgs),
		"bytes per owner":              fmt.Sprintf("%.0f", res.OwnerBytes),
		"user messages":                res.UserMsgs,
		"total messages":               res.TotalMsgs,
		"virtual time":                 res.Virtual.String(),
		"wall time":                    res.Wall.Round(time.Millisecond).String(),
		"peak heap MiB":                res.PeakHeap >> 20,
		"secure-sum latency per round": meanSumLatency(res.Rounds),
		"dropped messages":             res.Dropped,
	}
	if err := rep.finish(res.Model, data, start, runErr); err != nil {
		return err
	}
	if tf.model != "" && len(res.Model.Rounds) > 0 {
		if err := res.Model.Save(tf.model); err != nil {
			return err
		}
	}
	if len(res.Model.Rounds) == 0 {
		return fmt.Errorf("no base learner was accepted: %v", runErr)
	}
	return nil
}

func countTrue(b []bool) int {
	n := 0
	for _, x := range b {
		if x {
			n++
		}
	}
	return n
}

func meanSumLatency(rs []session.RoundReport) string {
	var sum time.Duration
	n := 0
	for _, r := range rs {
		if r.Accepted {
			sum += r.SumTime
			n++
		}
	}
	if n == 0 {
		return "n/a"
	}
	return (sum / time.Duration(n)).String() + " (virtual)"
}

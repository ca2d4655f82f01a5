package cli

import (
	"flag"
	"fmt"
	"math"
	"strconv"
)

// epsValue is an epsilon flag (--eps, --fed-eps): a finite number > 0,
// refused with the same words by every command, at parse time (command
// line or --config file).
type epsValue struct{ p *float64 }

func (e epsValue) String() string {
	if e.p == nil {
		return ""
	}
	return strconv.FormatFloat(*e.p, 'g', -1, 64)
}

func (e epsValue) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("not a number")
	}
	if !(v > 0) || math.IsInf(v, 0) {
		return errEpsRange
	}
	*e.p = v
	return nil
}

// errEpsRange is the one refusal of an epsilon out of range.
var errEpsRange = fmt.Errorf("epsilon must be a finite number > 0")

// epsVar registers an epsilon flag name with default def.
func epsVar(fs *flag.FlagSet, p *float64, name string, def float64, usage string) {
	*p = def
	fs.Var(epsValue{p}, name, usage)
}

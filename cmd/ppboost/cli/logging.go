package cli

import (
	"flag"
	"io"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// logFlags are --log-level and --log-json.
type logFlags struct {
	level string
	json  bool
}

func (l *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.level, "log-level", "info", "log level: trace | debug | info | warn | error")
	fs.BoolVar(&l.json, "log-json", false, "log JSON lines instead of text")
}

func (l *logFlags) logger(name string, w io.Writer) (hclog.Logger, error) {
	lvl := hclog.LevelFromString(strings.ToLower(l.level))
	if lvl == hclog.NoLevel {
		return nil, usagef("unknown --log-level %q", l.level)
	}
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: lvl, Output: w, JSONFormat: l.json}), nil
}

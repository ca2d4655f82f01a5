package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/ppboost/ppboost/protocol"
)

// Exit codes (README, "Exit codes"). A session's outcome decides the code
// of the data user and of every owner alike: 0 complete, 3 partial, 1
// failed.
const (
	exitOK      = 0
	exitError   = 1 // the command ran and failed (a session: failed, no model)
	exitUsage   = 2 // bad flags or arguments
	exitPartial = 3 // a session ended partial: its model holds fewer rounds than planned
	exitRefused = 4 // an owner refused the announced session, or heard none (bootstrap unreachable, not admitted)
)

// refusedError marks a node that did not take part: exit status 4.
type refusedError struct{ err error }

func (r refusedError) Error() string { return r.err.Error() }
func (r refusedError) Unwrap() error { return r.err }

// exitCode is the status of a command's error.
func exitCode(err error) int {
	if o, ok := protocol.OutcomeOf(err); ok {
		switch o.Kind {
		case protocol.OutcomeComplete:
			return exitOK
		case protocol.OutcomePartial:
			return exitPartial
		}
		return exitError
	}
	if errors.As(err, new(refusedError)) {
		return exitRefused
	}
	return exitError
}

type command struct {
	summary string
	run     func(args []string, out, errOut io.Writer) error
}

// commands holds every subcommand. Files that add a command register it in
// their own init with register, so systems stay in their own files.
var commands = map[string]command{}

func register(name, summary string, run func(args []string, out, errOut io.Writer) error) {
	if _, dup := commands[name]; dup {
		panic("cli: command registered twice: " + name)
	}
	commands[name] = command{summary, run}
}

func init() {
	for name, c := range map[string]command{
		"sim":       {"train with the one-process reference trainer (sizes, learner and rounds planned from the data unless given)", runSim},
		"predict":   {"evaluate a saved model on data, or write its predictions or per-class scores (--scores)", runPredict},
		"simulate":  {"run the full protocol over the in-memory network (planned from the data like sim)", runSimulate},
		"owner":     {"run a data owner node", runOwner},
		"user":      {"run the data user node: announce, coordinate, aggregate, save the model", runUser},
		"keygen":    {"make an identity key file and print its peer id", runKeygen},
		"testnet":   {"run a data user and 300 owners (--owners) as real libp2p hosts in this process, next to a non-private baseline", runTestnet},
		"partition": {"split a dataset into owner shards, the user's data, a test set and the public schema", runPartition},
	} {
		register(name, c.summary, c.run)
	}
}

// usageError marks errors that should exit with status 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// Main runs the command line and returns the exit status.
func Main(args []string, out, errOut io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				_ = c.run([]string{"-h"}, out, errOut)
				return exitOK
			}
		}
		printUsage(out)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(errOut, "ppboost: unknown command %q\n\n", args[0])
		printUsage(errOut)
		return exitUsage
	}
	err := c.run(args[1:], out, errOut)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, new(usageError)):
		fmt.Fprintf(errOut, "ppboost %s: %v\n", args[0], err)
		return exitUsage
	default:
		fmt.Fprintf(errOut, "ppboost %s: %v\n", args[0], err)
		return exitCode(err)
	}
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "ppboost: privacy-preserving federated boosting (Wang & Chang, local setting)")
	fmt.Fprintln(w, "\nUsage: ppboost <command> [flags]   (ppboost <command> -h for its flags)")
	fmt.Fprintln(w, "\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

// newFlagSet returns a flag set that reports errors instead of exiting and
// prints its usage to errOut.
func newFlagSet(name, synopsis string, errOut io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprintf(errOut, "Usage: ppboost %s\n\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags, turning errors into usage errors and refusing
// positional arguments.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{flagError(err)}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	return nil
}

// undefinedFlag matches the flag package's "not defined" error.
var undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)

// renamedFlags are the flags the one data interface (dataflags.go) replaced,
// with what to write instead: a script that still uses one is told, not
// silently mapped.
var renamedFlags = map[string]string{
	"test-samples": "use --holdout ROWS (or a fraction, --holdout 0.2), or --test FILE",
	"validation":   "use --data FILE (the data user's own labelled rows, as every command names its data)",
}

// invalidValue matches the flag package's "invalid value" error.
var invalidValue = regexp.MustCompile(`^invalid value "(.*)" for flag -([^:]+): (.*)$`)

// flagError puts the flag package's error for a value a flag refused in
// the words every other refusal uses: "--NAME: why, got VALUE".
func flagError(err error) error {
	if m := undefinedFlag.FindStringSubmatch(err.Error()); m != nil {
		if now, ok := renamedFlags[m[1]]; ok {
			return fmt.Errorf("--%s is gone: %s", m[1], now)
		}
	}
	m := invalidValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	return fmt.Errorf("--%s: %s, got %q", m[2], m[3], m[1])
}

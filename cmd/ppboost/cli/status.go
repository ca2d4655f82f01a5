package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/status"
)

// statusFlags are --status, --status-linger (user and owner) and --progress
// (user).
type statusFlags struct {
	addr   string
	linger time.Duration
	ln     net.Listener
}

func (s *statusFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.addr, "status", "", "serve a status page (HTML at /, JSON at /status.json) on this address, e.g. 127.0.0.1:8080; no authentication: keep it on loopback or a trusted network")
	fs.DurationVar(&s.linger, "status-linger", 3*time.Second, "with --status, keep serving this long after the session ended, so that an open page shows the outcome")
}

// bind opens the status address before anything else starts: an address
// that cannot be bound is a usage error naming the flag.
func (s *statusFlags) bind(ctx context.Context) error {
	if s.addr == "" {
		return nil
	}
	if s.linger < 0 {
		return usagef("--status-linger %v is negative", s.linger)
	}
	ln, err := status.Listen(ctx, "--status", s.addr)
	if err != nil {
		return usageError{err}
	}
	s.ln = ln
	return nil
}

// serve serves b on the bound address (if any) until the returned function
// is called; that function first lingers (--status-linger, cut short when
// ctx is cancelled: a signal) when ended is true. Without --status both are
// no-ops.
func (s *statusFlags) serve(ctx context.Context, b *status.Board, log hclog.Logger) func(ended bool) {
	if s.ln == nil {
		return func(bool) {}
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := status.Serve(sctx, s.ln, status.Handler(b)); err != nil {
			log.Error("status server", "err", err)
		}
	}()
	log.Info("status page", "url", "http://"+s.ln.Addr().String()+"/")
	var once sync.Once
	return func(ended bool) {
		once.Do(func() {
			if ended && s.linger > 0 {
				t := time.NewTimer(s.linger)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
				}
			}
			cancel()
			<-done
		})
	}
}

// closeUnused closes a bound listener that serve never took (an early
// error return).
func (s *statusFlags) closeUnused() {
	if s.ln != nil {
		s.ln.Close()
	}
}

// progress is the data user's one-line progress report on standard error.
// On a terminal the line is redrawn in place (\r) every second and log lines
// are written above it; otherwise a plain line is printed every plainEvery
// and after every round attempt.
type progress struct {
	mu     sync.Mutex
	w      io.Writer
	tty    bool
	shown  string // the line on the terminal (tty)
	board  *status.Board
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	every  time.Duration
	closed bool
}

// plainEvery is the period of plain progress lines (not a terminal).
const plainEvery = 10 * time.Second

// newProgress reports on w; mode is auto (a terminal gets the in-place
// line), tty, plain or off (nil).
func newProgress(w io.Writer, mode string) (*progress, error) {
	p := &progress{w: w, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), every: plainEvery}
	switch mode {
	case "off":
		return nil, nil
	case "auto":
		p.tty = isTerminal(w)
	case "tty":
		p.tty = true
	case "plain":
	default:
		return nil, usagef("--progress %q: want auto, tty, plain or off", mode)
	}
	if p.tty {
		p.every = time.Second
	}
	return p, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

// Write writes log output above the progress line.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.shown != "" {
		io.WriteString(p.w, "\r\x1b[K")
	}
	n, err := p.w.Write(b)
	if p.tty && p.shown != "" {
		io.WriteString(p.w, p.shown)
	}
	return n, err
}

// start reports b until finish is called.
func (p *progress) start(b *status.Board) {
	p.board = b
	go func() {
		defer close(p.done)
		t := time.NewTicker(p.every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.show(p.board.Status())
			case <-p.kick:
				p.show(p.board.Status())
			}
		}
	}()
}

// round asks for a line now (a round attempt ended).
func (p *progress) round() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// finish stops the reports and clears the terminal line.
func (p *progress) finish() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	if p.board != nil {
		close(p.stop)
		<-p.done
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.shown != "" {
		io.WriteString(p.w, "\r\x1b[K")
		p.shown = ""
	}
}

func (p *progress) show(s status.Status) {
	line := progressLine(s)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		io.WriteString(p.w, "\r\x1b[K"+line)
		p.shown = line
		return
	}
	fmt.Fprintln(p.w, line)
}

// progressLine is the one-line summary of a data user's status.
func progressLine(s status.Status) string {
	var b strings.Builder
	rounds := 0
	if s.Config != nil {
		rounds = s.Config.Rounds
	}
	var acc status.Num
	for _, r := range s.Rounds {
		if r.Accepted {
			acc = r.ValAccuracy
		}
	}
	o := s.Owners
	if o == nil {
		o = &status.Owners{}
	}
	switch {
	case s.Ended || s.State == "done" || s.State == "failed":
		b.WriteString(s.Outcome)
	case s.State == "joining":
		fmt.Fprintf(&b, "waiting for owners: %d joined", o.Joined)
		if o.Expected > 0 {
			fmt.Fprintf(&b, " of %d expected", o.Expected)
		}
		if o.NotJoined > 0 {
			fmt.Fprintf(&b, ", %d would not join", o.NotJoined)
		}
	default:
		fmt.Fprintf(&b, "round %d/%d", s.Round, rounds)
		if s.Attempt > 0 {
			fmt.Fprintf(&b, " attempt %d", s.Attempt)
		}
		if s.State == "shares" {
			fmt.Fprintf(&b, ": shares %d/%d", o.Shares, o.Selected)
		} else {
			fmt.Fprintf(&b, ": %s", s.State)
		}
		fmt.Fprintf(&b, " · kept %d", s.Kept)
		if acc != 0 {
			fmt.Fprintf(&b, " · validation acc %.1f %%", 100*float64(acc))
		}
		fmt.Fprintf(&b, " · owners %d", o.Roster)
	}
	if s.State != "joining" {
		// Each owner's epsilon is its own budget: the most one owner paid
		// (at most), never a sum over owners.
		fmt.Fprintf(&b, " · ε per owner ≤ %.1f", float64(s.Budget.PerOwnerMax))
	}
	fmt.Fprintf(&b, " · %.0f s", float64(s.Elapsed))
	line := b.String()
	const max = 160
	if r := []rune(line); len(r) > max {
		line = string(r[:max-1]) + "…"
	}
	return line
}

package experiment

// The multi-process WAN harness: with many owners, one process holding
// every host reaches the open-file limit (200 owners: about 10,000
// owner-to-owner TCP connections, both ends in the process). The parent
// keeps the data user and the coordinator; the owners run in child
// processes of at most wanProcOwners hosts each: the running binary
// re-executed with wanChildEnv set (cmd/ppboost's main and this package's
// TestMain hand such a process to WANChild). A child builds its owners
// behind its own emulator with the case's links (every link has the same
// delay, and netem delays a connection in the process that dialled it, so
// links between processes are emulated exactly as within one), and is
// driven over stdin/stdout with one JSON object per line:
//
//	parent -> child            child -> parent
//	{op: init, spec}           {op: hello, owners}       hosts up, connected to the user
//	{op: roster, owners}       {op: ready}               parties built, control topic joined
//	{op: prepare, round}       {op: prepared, ...}       the round's connections opened
//	{op: stats}                {op: stats, stats}        wire and protocol bytes, connections
//	{op: close}                (exits 0)
//
// Every reply may carry err instead. Children run in their own process
// group, which the parent kills on any failure and after close (and a
// child whose stdin ends closes its hosts and exits; on Linux the kernel
// also kills it when the parent dies), so no child outlives a run.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/ppboost/ppboost/node/netem"
)

const (
	wanChildEnv = "PPBOOST_WAN_CHILD" // set to "1" in a child's environment
	// wanProcOwners is the most owner hosts a child runs: 50 hosts with
	// up to 200 connections each stay well under 20,000 open files.
	wanProcOwners = 50
	// wanProcAbove: cases with more owners than this run them in child
	// processes (unless the case sets Procs).
	wanProcAbove = 60
)

// wanChildStarted, if set (by tests), is told the pid of every child.
var wanChildStarted func(pid int)

// wanProcs is the number of child processes a case runs its owners in (0:
// all in this process).
func wanProcs(c wanCase) int {
	switch {
	case c.Sim:
		return 0 // simnet runs in one process
	case c.Procs != 0:
		return max(c.Procs, 0)
	case c.Owners > wanProcAbove:
		return (c.Owners + wanProcOwners - 1) / wanProcOwners
	}
	return 0
}

type wanChildMsg struct {
	Op     string         `json:"op"`
	Spec   *wanGroupSpec  `json:"spec,omitempty"`
	Owners []wanOwnerInfo `json:"owners,omitempty"`
	Round  int            `json:"round,omitempty"`
	// Replies.
	Err     string         `json:"err,omitempty"`
	Seconds float64        `json:"seconds,omitempty"`
	Left    int64          `json:"left,omitempty"`
	Stats   *wanGroupStats `json:"stats,omitempty"`
}

// WANChild runs this process as a child of the multi-process WAN harness
// if its environment says it is one (and then returns true and the exit
// status); otherwise it returns false at once. A binary that runs the wan
// experiments calls it first thing in main (or TestMain).
func WANChild() (bool, int) {
	if job := os.Getenv(wanSimChildEnv); job != "" {
		return true, wanSimChild(job)
	}
	if os.Getenv(wanChildEnv) != "1" {
		return false, 0
	}
	// The protocol owns stdout; anything else printed goes to stderr.
	out := os.Stdout
	os.Stdout = os.Stderr
	if err := wanChildServe(os.Stdin, out); err != nil {
		fmt.Fprintf(os.Stderr, "wan child: %v\n", err)
		return true, 1
	}
	return true, 0
}

// wanChildServe is a child's life: build the group, then answer requests
// until close or the end of in.
func wanChildServe(in io.Reader, out io.Writer) error {
	dec := json.NewDecoder(bufio.NewReader(in))
	enc := json.NewEncoder(out)
	var m wanChildMsg
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("reading init: %w", err)
	}
	if m.Op != "init" || m.Spec == nil {
		return fmt.Errorf("first message is %q, want init", m.Op)
	}
	spec := *m.Spec
	if spec.Case.Load {
		stop := make(chan struct{})
		wg := burn(stop)
		defer func() { close(stop); wg.Wait() }()
	}
	g, err := wanChildGroup(spec)
	if err != nil {
		_ = enc.Encode(wanChildMsg{Op: "hello", Err: err.Error()})
		return err
	}
	defer g.close()
	if err := enc.Encode(wanChildMsg{Op: "hello", Owners: g.infos}); err != nil {
		return fmt.Errorf("writing hello: %w", err)
	}
	ctx := context.Background()
	for {
		var m wanChildMsg
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the parent went away: close and exit
			}
			return fmt.Errorf("reading a request: %w", err)
		}
		r := wanChildMsg{Op: m.Op}
		switch m.Op {
		case "roster":
			if err := g.setRoster(m.Owners); err != nil {
				r.Err = err.Error()
			}
			r.Op = "ready"
		case "prepare":
			r.Seconds, r.Left = g.prepare(ctx, m.Round)
			r.Op = "prepared"
		case "stats":
			s := g.stats()
			r.Stats = &s
		case "close":
			return nil
		default:
			r.Err = fmt.Sprintf("unknown op %q", m.Op)
		}
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("writing a reply: %w", err)
		}
	}
}

// wanChildOwners is a child's group with the infos of its owners.
type wanChildOwners struct {
	*wanGroup
	infos []wanOwnerInfo
	dir   string
}

func (g *wanChildOwners) close() {
	g.wanGroup.close()
	os.RemoveAll(g.dir)
}

func wanChildGroup(spec wanGroupSpec) (*wanChildOwners, error) {
	em, err := netem.New(spec.Seed+uint64(spec.Lo), netem.Link{Delay: spec.Case.Delay})
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ppboost-wan-child-")
	if err != nil {
		return nil, err
	}
	g, infos, err := newWANGroup(context.Background(), netemLinks{em}, dir, spec)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &wanChildOwners{g, infos, dir}, nil
}

// wanChild is the parent's handle on one child process.
type wanChild struct {
	lo, hi int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	enc    *json.Encoder
	dec    *json.Decoder
	stderr *tailBuffer
	mu     sync.Mutex
	dead   bool // killed after a reply did not come: no more calls
	exited chan struct{}
}

// startWANChild starts a child for owners [spec.Lo, spec.Hi) and sends it
// its spec.
func startWANChild(spec wanGroupSpec) (*wanChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("wan child: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), wanChildEnv+"=1")
	cmd.SysProcAttr = wanChildAttr()
	ch := &wanChild{lo: spec.Lo, hi: spec.Hi, cmd: cmd, stderr: &tailBuffer{max: 8 << 10}, exited: make(chan struct{})}
	cmd.Stderr = ch.stderr
	if ch.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("wan child for owners %d-%d: %w", spec.Lo, spec.Hi-1, err)
	}
	go func() { _ = cmd.Wait(); close(ch.exited) }()
	if f := wanChildStarted; f != nil {
		f(cmd.Process.Pid)
	}
	ch.enc, ch.dec = json.NewEncoder(ch.stdin), json.NewDecoder(bufio.NewReader(stdout))
	if err := ch.enc.Encode(wanChildMsg{Op: "init", Spec: &spec}); err != nil {
		ch.kill()
		return nil, ch.errorf("init: %w", err)
	}
	return ch, nil
}

func (ch *wanChild) errorf(format string, a ...any) error {
	err := fmt.Errorf(format, a...)
	if tail := bytes.TrimSpace(ch.stderr.Bytes()); len(tail) > 0 {
		err = fmt.Errorf("%w (its stderr ends: %s)", err, tail)
	}
	return fmt.Errorf("wan child for owners %d-%d: %w", ch.lo, ch.hi-1, err)
}

// call sends m (unless its op is empty) and reads the reply, which must
// have op want; limit bounds the wait (the child is killed past it).
func (ch *wanChild) call(m wanChildMsg, want string, limit time.Duration) (wanChildMsg, error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.dead {
		return m, ch.errorf("%s: killed after an earlier request went unanswered", want)
	}
	if m.Op != "" {
		if err := ch.enc.Encode(m); err != nil {
			return m, ch.errorf("%s: %w", m.Op, err)
		}
	}
	type res struct {
		r   wanChildMsg
		err error
	}
	done := make(chan res, 1)
	go func() {
		var r wanChildMsg
		err := ch.dec.Decode(&r)
		done <- res{r, err}
	}()
	select {
	case x := <-done:
		switch {
		case x.err != nil:
			<-time.After(100 * time.Millisecond) // let its last words reach stderr
			return x.r, ch.errorf("waiting for %s: %w", want, x.err)
		case x.r.Err != "":
			return x.r, ch.errorf("%s: %s", want, x.r.Err)
		case x.r.Op != want:
			return x.r, ch.errorf("reply %q, want %q", x.r.Op, want)
		}
		return x.r, nil
	case <-time.After(limit):
		ch.dead = true
		ch.kill()
		return wanChildMsg{}, ch.errorf("no %s within %v", want, limit)
	}
}

// close asks the child to exit, and kills its process group if it has not
// within a minute (or at once if it is stuck).
func (ch *wanChild) close() {
	if ch.mu.TryLock() {
		_ = ch.enc.Encode(wanChildMsg{Op: "close"})
		ch.mu.Unlock()
	}
	ch.stdin.Close()
	select {
	case <-ch.exited:
	case <-time.After(time.Minute):
	}
	ch.kill()
}

// kill ends the child's whole process group and waits for the child.
func (ch *wanChild) kill() {
	select {
	case <-ch.exited: // reaped: its pid may be someone else's now
	default:
		wanKillGroup(ch.cmd)
		<-ch.exited
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.b)
}

// wanOwnerSet is a harness's owners: one group in this process
// (wanLocal) or groups in child processes (wanChildren).
type wanOwnerSet interface {
	setRoster(all []wanOwnerInfo) error
	prepare(ctx context.Context, round int) (seconds float64, unfinished int64, err error)
	stats() (wanGroupStats, error)
	close()
}

type wanLocal struct{ *wanGroup }

func (l wanLocal) prepare(ctx context.Context, round int) (float64, int64, error) {
	s, left := l.wanGroup.prepare(ctx, round)
	return s, left, nil
}

func (l wanLocal) stats() (wanGroupStats, error) { return l.wanGroup.stats(), nil }

// wanChildren are the child processes of a harness, and the parent's
// emulator (which charges to owners the bytes they send back on
// connections the data user dialled).
type wanChildren struct {
	em    *netem.Emulator
	kids  []*wanChild
	names []string
}

// Limits on a child's answers: building 50 hosts and connecting them on a
// loaded machine, a prepare (which ends after two minutes itself), stats.
const (
	wanChildStartLimit   = 5 * time.Minute
	wanChildPrepareLimit = 3 * time.Minute
	wanChildStatsLimit   = time.Minute
)

// startWANChildren starts procs children for the owners of spec.Case, in
// contiguous slices of indices, and waits for their hosts. On error every
// child is killed.
func startWANChildren(em *netem.Emulator, spec wanGroupSpec, procs int) (*wanChildren, []wanOwnerInfo, error) {
	n := spec.Case.Owners
	procs = min(procs, n)
	w := &wanChildren{em: em}
	for k := range procs {
		s := spec
		s.Lo, s.Hi = k*n/procs, (k+1)*n/procs
		ch, err := startWANChild(s)
		if err != nil {
			w.close()
			return nil, nil, err
		}
		w.kids = append(w.kids, ch)
	}
	infos := make([]wanOwnerInfo, n)
	err := w.each(func(ch *wanChild) error {
		r, err := ch.call(wanChildMsg{}, "hello", wanChildStartLimit)
		if err != nil {
			return err
		}
		if len(r.Owners) != ch.hi-ch.lo {
			return ch.errorf("hello with %d owners", len(r.Owners))
		}
		for _, o := range r.Owners {
			if o.Index < ch.lo || o.Index >= ch.hi {
				return ch.errorf("hello names owner %d", o.Index)
			}
			infos[o.Index] = o
		}
		return nil
	})
	if err != nil {
		w.close()
		return nil, nil, err
	}
	for i := range n {
		w.names = append(w.names, wanOwnerName(i))
	}
	return w, infos, nil
}

// each runs f on every child at once and returns the first error.
func (w *wanChildren) each(f func(*wanChild) error) error {
	errs := make([]error, len(w.kids))
	var wg sync.WaitGroup
	for k, ch := range w.kids {
		wg.Add(1)
		go func() { defer wg.Done(); errs[k] = f(ch) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (w *wanChildren) setRoster(all []wanOwnerInfo) error {
	return w.each(func(ch *wanChild) error {
		_, err := ch.call(wanChildMsg{Op: "roster", Owners: all}, "ready", wanChildStartLimit)
		return err
	})
}

// prepare runs every child's prepare at once: the time is the slowest
// child's, the unfinished dials the sum.
func (w *wanChildren) prepare(_ context.Context, round int) (float64, int64, error) {
	var mu sync.Mutex
	var secs float64
	var left int64
	err := w.each(func(ch *wanChild) error {
		r, err := ch.call(wanChildMsg{Op: "prepare", Round: round}, "prepared", wanChildPrepareLimit)
		mu.Lock()
		secs, left = max(secs, r.Seconds), left+r.Left
		mu.Unlock()
		return err
	})
	return secs, left, err
}

// stats adds the children's counters and the parent's own share of the
// owners' wire bytes.
func (w *wanChildren) stats() (wanGroupStats, error) {
	var mu sync.Mutex
	var s wanGroupStats
	for _, name := range w.names {
		s.Wire += w.em.Node(name).Sent()
	}
	err := w.each(func(ch *wanChild) error {
		r, err := ch.call(wanChildMsg{Op: "stats"}, "stats", wanChildStatsLimit)
		if err == nil && r.Stats == nil {
			err = ch.errorf("stats reply without stats")
		}
		if err != nil {
			return err
		}
		mu.Lock()
		s.add(*r.Stats)
		mu.Unlock()
		return nil
	})
	return s, err
}

func (w *wanChildren) close() {
	_ = w.each(func(ch *wanChild) error { ch.close(); return nil })
}

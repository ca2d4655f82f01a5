package node

// The multi-process conformance harness: every peer of a conformance
// cluster is a libp2p node in its own OS process (this test binary,
// re-executed with procChildEnv set), talking to the others over loopback
// TCP. The suite's protocol parties stay in the test process and reach
// their node through a procPeer, a protocol.Transport that forwards each
// call over the child's stdin and gets replies, inbound messages and topic
// validation requests back on its stdout (gob). Kill is SIGKILL: the peer
// crashes with its sockets, as a real owner would.

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/conformance"
	"github.com/ppboost/ppboost/protocol/role"
	"github.com/ppboost/ppboost/protocol/wire"
)

const (
	procChildEnv    = "PPBOOST_NODE_CHILD"          // key file of the child's identity
	procExpectedEnv = "PPBOOST_NODE_CHILD_EXPECTED" // Config.ExpectedPeers
	// procVerdictWait bounds how long a child's topic validator waits for
	// the test process's verdict before ignoring the message.
	procVerdictWait = 10 * time.Second
)

// procReq is one call from the test process to a child.
type procReq struct {
	ID      uint64
	Op      string // join publish send handler validator verdict addaddrs connect wait close
	Topic   string
	Proto   string
	Peer    string // send: destination; addaddrs: peer; connect: full multiaddr
	Data    []byte
	Addrs   []string
	N       int
	Verdict protocol.Verdict
	Timeout time.Duration
}

// procEvent is one message from a child to the test process.
type procEvent struct {
	Kind  string // hello reply msg validate
	ID    uint64 // reply: the request's; validate: the verdict's
	Err   string
	Peer  string   // hello: the child's id; msg, validate: the author
	Addrs []string // hello
	Topic string
	Proto string
	Data  []byte
}

// procChildMain runs a child: one node, served over stdin/stdout until the
// test process says close or goes away. Its logs go to stderr.
func procChildMain() int {
	log := hclog.New(&hclog.LoggerOptions{Name: "child", Output: os.Stderr, Level: hclog.Debug})
	expected, _ := strconv.Atoi(os.Getenv(procExpectedEnv))
	cfg := DefaultConfig()
	cfg.KeyFile = os.Getenv(procChildEnv)
	cfg.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0"}
	cfg.ExpectedPeers = max(expected, 16)
	cfg.DialTimeout, cfg.StreamTimeout = 5*time.Second, 5*time.Second
	cfg.Logger = log
	h, err := New(context.Background(), cfg)
	if err != nil {
		log.Error("start", "err", err)
		return 1
	}
	c := &procChild{h: h, enc: gob.NewEncoder(os.Stdout), verdicts: map[uint64]chan protocol.Verdict{}}
	c.emit(procEvent{Kind: "hello", Peer: string(h.ID()), Addrs: h.Addrs()})
	dec := gob.NewDecoder(os.Stdin)
	var calls sync.WaitGroup
	for {
		var r procReq
		if err := dec.Decode(&r); err != nil {
			if !errors.Is(err, io.EOF) {
				log.Error("reading requests", "err", err)
			}
			break
		}
		if r.Op == "verdict" {
			c.verdict(r.ID, r.Verdict)
			continue
		}
		if r.Op == "close" {
			calls.Wait()
			c.reply(r.ID, h.Close())
			return 0
		}
		calls.Add(1)
		go func() {
			defer calls.Done()
			c.reply(r.ID, c.do(r))
		}()
	}
	h.Close()
	return 0
}

type procChild struct {
	h        *Host
	mu       sync.Mutex // serializes enc
	enc      *gob.Encoder
	vmu      sync.Mutex
	next     uint64
	verdicts map[uint64]chan protocol.Verdict
}

func (c *procChild) emit(e procEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.enc.Encode(e); err != nil {
		os.Exit(3) // the test process is gone
	}
}

func (c *procChild) reply(id uint64, err error) {
	e := procEvent{Kind: "reply", ID: id}
	if err != nil {
		e.Err = err.Error()
	}
	c.emit(e)
}

func (c *procChild) do(r procReq) error {
	ctx, cancel := context.WithTimeout(context.Background(), max(r.Timeout, time.Millisecond))
	defer cancel()
	switch r.Op {
	case "join":
		return c.h.Join(r.Topic)
	case "publish":
		return c.h.Publish(ctx, r.Topic, r.Data)
	case "send":
		return c.h.Send(ctx, protocol.PeerID(r.Peer), r.Proto, r.Data)
	case "handler":
		// The node calls this from its stream and topic goroutines; emit
		// writes before returning, so a Send acknowledged to its sender has
		// reached the test process, in order.
		c.h.SetHandler(func(m protocol.Message) {
			c.emit(procEvent{Kind: "msg", Peer: string(m.From), Topic: m.Topic, Proto: m.Protocol, Data: m.Data})
		})
		return nil
	case "validator":
		return c.h.SetTopicValidator(r.Topic, func(from protocol.PeerID, data []byte) protocol.Verdict {
			ch := make(chan protocol.Verdict, 1)
			c.vmu.Lock()
			c.next++
			id := c.next
			c.verdicts[id] = ch
			c.vmu.Unlock()
			defer func() {
				c.vmu.Lock()
				delete(c.verdicts, id)
				c.vmu.Unlock()
			}()
			c.emit(procEvent{Kind: "validate", ID: id, Peer: string(from), Topic: r.Topic, Data: data})
			select {
			case v := <-ch:
				return v
			case <-time.After(procVerdictWait):
				return protocol.Ignore
			}
		})
	case "addaddrs":
		c.h.AddAddrs(protocol.PeerID(r.Peer), r.Addrs)
		return nil
	case "connect":
		return c.h.Connect(ctx, r.Peer)
	case "wait":
		return c.h.WaitTopicPeers(ctx, r.Topic, r.N)
	}
	return fmt.Errorf("unknown op %q", r.Op)
}

func (c *procChild) verdict(id uint64, v protocol.Verdict) {
	c.vmu.Lock()
	ch := c.verdicts[id]
	c.vmu.Unlock()
	if ch != nil {
		ch <- v
	}
}

// errProcGone is returned by calls on a killed or exited child.
var errProcGone = errors.New("node process is gone")

// procPeer is the test process's end of a child: a protocol.Transport (and
// Validating, MeshWaiter, AddressBook) whose calls run in the child.
type procPeer struct {
	id     protocol.PeerID
	name   string
	addrs  []string
	cmd    *exec.Cmd
	stderr *syncBuffer

	mu      sync.Mutex // serializes enc, guards pending and next
	enc     *gob.Encoder
	stdin   io.Closer
	next    uint64
	pending map[uint64]chan string

	handler    atomic.Pointer[func(protocol.Message)]
	validators sync.Map // topic -> func(protocol.PeerID, []byte) protocol.Verdict
	gone       chan struct{}
	readerDone chan struct{}
	closeOnce  sync.Once
}

// startProc starts a child node and waits for its hello.
func startProc(t *testing.T, name string, expected int) (*procPeer, error) {
	key := filepath.Join(t.TempDir(), name+".key")
	if _, err := GenerateKey(key); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), procChildEnv+"="+key, procExpectedEnv+"="+strconv.Itoa(expected))
	p := &procPeer{cmd: cmd, stderr: &syncBuffer{}, pending: map[uint64]chan string{},
		gone: make(chan struct{}), readerDone: make(chan struct{})}
	cmd.Stderr = p.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.enc, p.stdin = gob.NewEncoder(in), in
	dec := gob.NewDecoder(out)
	var hello procEvent
	if err := dec.Decode(&hello); err != nil || hello.Kind != "hello" {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("%s: no hello (%v): %s", name, err, p.stderr.String())
	}
	p.id, p.addrs = protocol.PeerID(hello.Peer), hello.Addrs
	go p.read(dec)
	return p, nil
}

// read takes the child's events until its stdout closes. Replies complete
// their calls here; messages go to the handler through dispatch, in the
// order the child emitted them, so that a handler that calls the transport
// (AddAddrs from a roster, say) does not stop its own reply from being
// read; validation requests run on their own goroutines, since a validator
// may wait for a lock the handler holds.
func (p *procPeer) read(dec *gob.Decoder) {
	defer close(p.readerDone)
	var validations sync.WaitGroup
	defer validations.Wait()
	inbox := make(chan protocol.Message, 1<<16)
	dispatched := make(chan struct{})
	go func() {
		defer close(dispatched)
		for m := range inbox {
			if h := p.handler.Load(); h != nil {
				(*h)(m)
			}
		}
	}()
	defer func() { <-dispatched }()
	defer close(inbox)
	defer func() {
		p.mu.Lock()
		close(p.gone)
		p.mu.Unlock()
	}()
	for {
		var e procEvent
		if err := dec.Decode(&e); err != nil {
			return
		}
		switch e.Kind {
		case "reply":
			p.mu.Lock()
			ch := p.pending[e.ID]
			delete(p.pending, e.ID)
			p.mu.Unlock()
			if ch != nil {
				ch <- e.Err
			}
		case "msg":
			inbox <- protocol.Message{From: protocol.PeerID(e.Peer), Topic: e.Topic, Protocol: e.Proto, Data: e.Data}
		case "validate":
			validations.Add(1)
			go func() {
				defer validations.Done()
				v := protocol.Ignore
				if f, ok := p.validators.Load(e.Topic); ok {
					v = f.(func(protocol.PeerID, []byte) protocol.Verdict)(protocol.PeerID(e.Peer), e.Data)
				}
				p.mu.Lock()
				defer p.mu.Unlock()
				select {
				case <-p.gone:
				default:
					p.enc.Encode(procReq{Op: "verdict", ID: e.ID, Verdict: v})
				}
			}()
		}
	}
}

// call runs one request in the child and waits for its reply, ctx's end or
// the child's exit.
func (p *procPeer) call(ctx context.Context, r procReq) error {
	r.Timeout = time.Minute // the child's bound for a call without a deadline
	if d, ok := ctx.Deadline(); ok {
		r.Timeout = time.Until(d)
	}
	ch := make(chan string, 1)
	p.mu.Lock()
	select {
	case <-p.gone:
		p.mu.Unlock()
		return fmt.Errorf("%s %s: %w", r.Op, p.id, errProcGone)
	default:
	}
	p.next++
	r.ID = p.next
	p.pending[r.ID] = ch
	err := p.enc.Encode(r)
	p.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s %s: %w (%v)", r.Op, p.id, errProcGone, err)
	}
	select {
	case e := <-ch:
		if e != "" {
			return errors.New(e)
		}
		return nil
	case <-ctx.Done():
		p.mu.Lock()
		delete(p.pending, r.ID)
		p.mu.Unlock()
		return ctx.Err()
	case <-p.gone:
		return fmt.Errorf("%s %s: %w", r.Op, p.id, errProcGone)
	}
}

func (p *procPeer) ID() protocol.PeerID   { return p.id }
func (p *procPeer) ListenAddrs() []string { return p.addrs }

func (p *procPeer) Join(topic string) error {
	return p.call(context.Background(), procReq{Op: "join", Topic: topic})
}

func (p *procPeer) Publish(ctx context.Context, topic string, data []byte) error {
	return p.call(ctx, procReq{Op: "publish", Topic: topic, Data: data})
}

func (p *procPeer) Send(ctx context.Context, to protocol.PeerID, protoID string, data []byte) error {
	return p.call(ctx, procReq{Op: "send", Peer: string(to), Proto: protoID, Data: data})
}

func (p *procPeer) SetHandler(h func(protocol.Message)) {
	p.handler.Store(&h)
	p.call(context.Background(), procReq{Op: "handler"})
}

func (p *procPeer) SetTopicValidator(topic string, v func(protocol.PeerID, []byte) protocol.Verdict) error {
	p.validators.Store(topic, v)
	return p.call(context.Background(), procReq{Op: "validator", Topic: topic})
}

func (p *procPeer) WaitTopicPeers(ctx context.Context, topic string, n int) error {
	return p.call(ctx, procReq{Op: "wait", Topic: topic, N: n})
}

func (p *procPeer) AddAddrs(peer protocol.PeerID, addrs []string) {
	p.call(context.Background(), procReq{Op: "addaddrs", Peer: string(peer), Addrs: addrs})
}

func (p *procPeer) connect(ctx context.Context, addr string) error {
	return p.call(ctx, procReq{Op: "connect", Peer: addr})
}

// kill crashes the child (SIGKILL) without waiting for it.
func (p *procPeer) kill() { p.cmd.Process.Kill() }

// Close asks the child to close its node and exit, kills it if it has not
// within 10 s, and waits for it and for the event reader.
func (p *procPeer) Close() error {
	var err error
	p.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if e := p.call(ctx, procReq{Op: "close"}); e != nil && !errors.Is(e, errProcGone) {
			err = e
			p.kill()
		}
		p.stdin.Close()
		exited := make(chan struct{})
		go func() { p.cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			p.kill()
			<-exited
		}
		<-p.readerDone
	})
	return err
}

// procHarness runs the conformance suite with one process per peer.
type procHarness struct{}

func (procHarness) MaxOwners() int { return 16 }

func (procHarness) Start(t *testing.T, owners int) conformance.Cluster {
	c := &procCluster{t: t, peers: map[protocol.PeerID]*procPeer{}}
	// Start every process at once: each pays the binary's start-up.
	procs := make([]*procPeer, owners+1)
	errs := make([]error, owners+1)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name, expected := fmt.Sprintf("owner-%02d", i-1), 32
			if i == 0 {
				name, expected = "user", owners+8
			}
			procs[i], errs[i] = startProc(t, name, expected)
		}()
	}
	wg.Wait()
	for i, p := range procs {
		if p != nil {
			c.track(t, p, fmt.Sprintf("peer %d", i))
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	c.user = c.peer(procs[0])
	for _, p := range procs[1:] {
		c.owners = append(c.owners, c.peer(p))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, p := range procs[1:] {
		if err := p.connect(ctx, procs[0].addrs[0]); err != nil {
			t.Fatal(err)
		}
		for _, q := range procs[1:] {
			if p != q {
				p.AddAddrs(q.id, q.addrs)
			}
		}
	}
	return c
}

type procCluster struct {
	realTime
	t      *testing.T
	mu     sync.Mutex
	peers  map[protocol.PeerID]*procPeer
	user   conformance.Peer
	owners []conformance.Peer
	n      int
}

// track registers p with the cluster. The first call also registers the
// cluster's teardown: close every process at once (each node's Close takes
// a while under -race; one after the other they would dominate the suite)
// and show the tail of each log if the test failed.
func (c *procCluster) track(t *testing.T, p *procPeer, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p.name = name
	c.peers[p.id] = p
	if len(c.peers) > 1 {
		return
	}
	t.Cleanup(func() {
		c.mu.Lock()
		peers := make([]*procPeer, 0, len(c.peers))
		for _, q := range c.peers {
			peers = append(peers, q)
		}
		c.mu.Unlock()
		var wg sync.WaitGroup
		for _, q := range peers {
			wg.Add(1)
			go func() { defer wg.Done(); q.Close() }()
		}
		wg.Wait()
		if !t.Failed() {
			return
		}
		for _, q := range peers {
			log := q.stderr.String()
			if len(log) > 8<<10 {
				log = "..." + log[len(log)-8<<10:]
			}
			t.Logf("%s (%s) log:\n%s", q.name, q.id, log)
		}
	})
}

func (c *procCluster) peer(p *procPeer) conformance.Peer {
	post := role.NewPost(p, role.Resolve(p, nil, role.WithSendTimeout(5*time.Second)), hclog.NewNullLogger())
	c.t.Cleanup(post.Close) // runs before the process closes (cleanups are LIFO)
	return conformance.Peer{ID: p.id, Transport: p, Post: post}
}

func (c *procCluster) User() conformance.Peer     { return c.user }
func (c *procCluster) Owners() []conformance.Peer { return c.owners }

func (c *procCluster) Extra(t *testing.T) conformance.Peer {
	c.n++
	p, err := startProc(t, fmt.Sprintf("stranger-%d", c.n), 32)
	if err != nil {
		t.Fatal(err)
	}
	c.track(t, p, fmt.Sprintf("stranger %d", c.n))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Connected like an owner: to the user and to every owner, so that
	// what it sends reaches them.
	for _, o := range append([]conformance.Peer{c.user}, c.owners...) {
		if err := p.connect(ctx, o.Transport.(*procPeer).addrs[0]); err != nil {
			t.Fatal(err)
		}
	}
	return c.peer(p)
}

// Ready waits until the user sees every owner on the control topic.
func (c *procCluster) Ready(t *testing.T) {
	waitOwners(t, c.user.Transport.(*procPeer), len(c.owners))
}

func (c *procCluster) Kill(id protocol.PeerID) {
	c.mu.Lock()
	p := c.peers[id]
	c.mu.Unlock()
	p.kill()
}

// Scale: every message crosses two pipes besides the network.
func (c *procCluster) Scale() time.Duration { return 10 * time.Millisecond }

// TestConformanceProcesses runs the conformance suite with every peer a
// node in its own process. About 90 s under -race: skipped under -short,
// run by .ci/run.
func TestConformanceProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: the multi-process conformance suite runs without -short (.ci/run does)")
	}
	conformance.Run(t, procHarness{})
}

// TestProcPeerForwards checks the harness itself: a message sent between
// two child processes arrives with its author, a topic validator's verdict
// is honoured, and a killed child fails calls instead of hanging.
func TestProcPeerForwards(t *testing.T) {
	c := &procCluster{t: t, peers: map[protocol.PeerID]*procPeer{}}
	a, err := startProc(t, "a", 16)
	if err != nil {
		t.Fatal(err)
	}
	c.track(t, a, "a")
	b, err := startProc(t, "b", 16)
	if err != nil {
		t.Fatal(err)
	}
	c.track(t, b, "b")
	got := make(chan protocol.Message, 4)
	b.SetHandler(func(m protocol.Message) { got <- m })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a.AddAddrs(b.id, b.addrs)
	if err := a.Send(ctx, b.id, wire.ProtoSession, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if m := <-got; m.From != a.id || !bytes.Equal(m.Data, []byte("hello")) || m.Protocol != wire.ProtoSession {
		t.Fatalf("got %+v", m)
	}
	// Pubsub through a validator that rejects "bad".
	a.SetHandler(func(protocol.Message) {})
	if err := b.SetTopicValidator(wire.TopicControl, func(_ protocol.PeerID, d []byte) protocol.Verdict {
		if string(d) == "bad" {
			return protocol.Reject
		}
		return protocol.Accept
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*procPeer{a, b} {
		if err := p.Join(wire.TopicControl); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.connect(ctx, b.addrs[0]); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitTopicPeers(ctx, wire.TopicControl, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitTopicPeers(ctx, wire.TopicControl, 1); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"bad", "good"} {
		if err := a.Publish(ctx, wire.TopicControl, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case m := <-got:
		if string(m.Data) != "good" || m.Topic != wire.TopicControl || m.From != a.id {
			t.Fatalf("after the validator: got %+v", m)
		}
	case <-ctx.Done():
		t.Fatal("no publication arrived")
	}
	c.Kill(b.id)
	<-b.gone
	// Send returns once its frame is queued on an open stream: until a
	// notices that the connection died, a Send may still be queued (and
	// lost). Once it has, Sends fail.
	for a.Send(ctx, b.id, wire.ProtoSession, []byte("x")) == nil {
		if ctx.Err() != nil {
			t.Fatal("sends to a killed process kept succeeding")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := b.Join("x"); !errors.Is(err, errProcGone) {
		t.Fatalf("call on a killed process: %v", err)
	}
}

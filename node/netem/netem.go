package netem

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// MSS is the TCP segment size the loss model cuts writes into.
const MSS = 1460

// MaxQueued bounds the bytes one direction of a link holds in flight.
const MaxQueued = 4 << 20

// MinRTO is Linux's minimum TCP retransmission timeout.
const MinRTO = 200 * time.Millisecond

// Link describes one direction of a path between two nodes.
type Link struct {
	// Delay is the one-way propagation delay.
	Delay time.Duration
	// Jitter spreads each packet's delay uniformly over
	// [Delay-Jitter, Delay+Jitter] (never below zero).
	Jitter time.Duration
	// Loss is the probability that a datagram (UDP) or a segment (TCP) is
	// lost, in [0, 1).
	Loss float64
	// Bandwidth is in bytes per second; 0 means unlimited.
	Bandwidth float64
	// RTO is how late a lost TCP segment arrives; 0 means
	// max(MinRTO, 3 x Delay).
	RTO time.Duration
}

// Validate names the bad field.
func (l Link) Validate() error {
	switch {
	case l.Delay < 0:
		return fmt.Errorf("netem: Delay %v is negative", l.Delay)
	case l.Jitter < 0:
		return fmt.Errorf("netem: Jitter %v is negative", l.Jitter)
	case !(l.Loss >= 0 && l.Loss < 1):
		return fmt.Errorf("netem: Loss %v is not in [0, 1)", l.Loss)
	case !(l.Bandwidth >= 0):
		return fmt.Errorf("netem: Bandwidth %v is negative", l.Bandwidth)
	case l.RTO < 0:
		return fmt.Errorf("netem: RTO %v is negative", l.RTO)
	}
	return nil
}

func (l Link) rto() time.Duration {
	if l.RTO > 0 {
		return l.RTO
	}
	return max(MinRTO, 3*l.Delay)
}

// delay draws one packet's propagation delay.
func (l Link) delay(r *rand.Rand) time.Duration {
	d := l.Delay
	if l.Jitter > 0 {
		d += time.Duration(r.Int64N(int64(2*l.Jitter)+1)) - l.Jitter
	}
	return max(d, 0)
}

// txTime is how long n bytes occupy the link.
func (l Link) txTime(n int) time.Duration {
	if l.Bandwidth <= 0 {
		return 0
	}
	return time.Duration(float64(n) / l.Bandwidth * float64(time.Second))
}

// Emulator holds the links between named nodes. Safe for concurrent use.
type Emulator struct {
	seed uint64
	conn atomic.Uint64 // numbers the random stream of every wrapped conn

	mu    sync.Mutex
	def   Link
	links map[[2]string]Link
	at    map[endpoint]*Node // where nodes listen
	nodes map[string]*Node
}

// New returns an emulator whose links default to def. seed fixes every
// random draw (jitter, loss) of each wrapped connection, given the order
// in which connections are wrapped.
func New(seed uint64, def Link) (*Emulator, error) {
	if err := def.Validate(); err != nil {
		return nil, err
	}
	return &Emulator{seed: seed, def: def, links: map[[2]string]Link{}, at: map[endpoint]*Node{}, nodes: map[string]*Node{}}, nil
}

// SetLink sets the link from one node to another (one direction).
func (e *Emulator) SetLink(from, to string, l Link) error {
	if err := l.Validate(); err != nil {
		return fmt.Errorf("link %s -> %s: %w", from, to, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.links[[2]string{from, to}] = l
	return nil
}

// Link is the link from one node to another; to is "" for an address no
// node has registered.
func (e *Emulator) Link(from, to string) Link {
	e.mu.Lock()
	defer e.mu.Unlock()
	if l, ok := e.links[[2]string{from, to}]; ok {
		return l
	}
	return e.def
}

// Node returns the node of that name, creating it on first use.
func (e *Emulator) Node(name string) *Node {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n, ok := e.nodes[name]; ok {
		return n
	}
	n := &Node{e: e, name: name}
	e.nodes[name] = n
	return n
}

// nodeAt is the node listening at addr, or nil.
func (e *Emulator) nodeAt(addr net.Addr) *Node {
	ap, ok := addrPort(addr)
	if !ok {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.at[ap]
}

func (e *Emulator) rand() *rand.Rand {
	return rand.New(rand.NewPCG(e.seed, e.conn.Add(1)))
}

// endpoint is a transport address: a TCP and a UDP port of the same
// number are different endpoints.
type endpoint struct {
	udp bool
	ap  netip.AddrPort
}

// addrPort is a's endpoint, IPv4 unmapped (sockets report 127.0.0.1 as
// ::ffff:127.0.0.1).
func addrPort(a net.Addr) (endpoint, bool) {
	var e endpoint
	switch a := a.(type) {
	case *net.TCPAddr:
		e.ap = a.AddrPort()
	case *net.UDPAddr:
		e.ap, e.udp = a.AddrPort(), true
	default:
		return e, false
	}
	e.ap = netip.AddrPortFrom(e.ap.Addr().Unmap(), e.ap.Port())
	return e, true
}

// Node is one endpoint of emulated links: the wrappers of one host.
type Node struct {
	e    *Emulator
	name string
	sent atomic.Int64
}

// Name is the node's name.
func (n *Node) Name() string { return n.name }

// Sent is the number of bytes this node put on the wire (TCP payload and
// UDP datagrams, lost ones included; TCP retransmissions not counted).
func (n *Node) Sent() int64 { return n.sent.Load() }

// Register records that the node listens at these addresses, so that
// links to it are looked up by its name (and the bytes it sends on
// connections other nodes dialled are counted as its own).
func (n *Node) Register(addrs ...net.Addr) {
	n.e.mu.Lock()
	defer n.e.mu.Unlock()
	for _, a := range addrs {
		if ap, ok := addrPort(a); ok {
			n.e.at[ap] = n
		}
	}
}

func (n *Node) peerName(addr net.Addr) (string, *Node) {
	if p := n.e.nodeAt(addr); p != nil {
		return p.name, p
	}
	return "", nil
}

// DialContext dials like net.Dialer and wraps the connection (see
// WrapConn). It is a tcp.ContextDialer for node.WithTCPDialer.
func (n *Node) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		// What go-libp2p's TCP transport sets on its own dials (it cannot
		// reach the socket under the wrapper).
		_ = tc.SetLinger(0)
		_ = tc.SetKeepAlive(true)
	}
	// TCP's handshake: the SYN and the SYN-ACK cross the links before the
	// dialler's first byte may leave (it rides with the third packet), a
	// round trip the loopback's own handshake does not take. Without it a
	// dial returned at once and every new connection on a message chain
	// came out a round trip cheaper than on a real path (issue 31).
	peer, _ := n.peerName(c.RemoteAddr())
	if rtt := n.e.Link(n.name, peer).Delay + n.e.Link(peer, n.name).Delay; rtt > 0 {
		t := time.NewTimer(rtt)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			c.Close()
			return nil, ctx.Err()
		}
	}
	return n.WrapConn(c), nil
}

// WrapConn delays both directions of a stream connection that this node
// dialled: writes by the link to the remote node, reads by the link back.
// The remote node is found by c.RemoteAddr (see Register).
func (n *Node) WrapConn(c net.Conn) net.Conn {
	peer, pn := n.peerName(c.RemoteAddr())
	r := n.e.rand()
	w := &conn{Conn: c, readable: make(chan struct{}, 1), done: make(chan struct{})}
	w.out = newLine(n.e.Link(n.name, peer), r, &n.sent)
	var in *atomic.Int64
	if pn != nil {
		in = &pn.sent
	}
	w.in = newLine(n.e.Link(peer, n.name), rand.New(rand.NewPCG(r.Uint64(), r.Uint64())), in)
	w.wg.Add(3)
	go w.pumpOut()
	go w.pumpIn()
	go w.readSocket()
	return w
}

var errClosed = net.ErrClosed

// chunk is bytes with the time they reach the other end.
type chunk struct {
	b  []byte
	at time.Time
}

// line is one direction of a TCP link: a FIFO of chunks, each released at
// its arrival time and never before the one ahead of it.
type line struct {
	link    Link
	r       *rand.Rand
	counter *atomic.Int64 // bytes sent, charged to the sending node (may be nil)

	mu       sync.Mutex
	cond     *sync.Cond
	q        []chunk
	queued   int
	busy     time.Time // when the link finishes transmitting what it has
	last     time.Time // arrival time of the last chunk queued
	closed   bool
	notEmpty chan struct{}
}

func newLine(l Link, r *rand.Rand, counter *atomic.Int64) *line {
	x := &line{link: l, r: r, counter: counter, notEmpty: make(chan struct{}, 1)}
	x.cond = sync.NewCond(&x.mu)
	return x
}

// put queues a copy of b, cut into segments, and waits while the line is
// full. It fails once the line is closed.
func (x *line) put(b []byte) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for len(b) > 0 {
		for !x.closed && x.queued >= MaxQueued {
			x.cond.Wait()
		}
		if x.closed {
			return errClosed
		}
		seg := b[:min(len(b), MSS)]
		b = b[len(seg):]
		now := time.Now()
		x.busy = later(x.busy, now).Add(x.link.txTime(len(seg)))
		at := x.busy.Add(x.link.delay(x.r))
		if x.link.Loss > 0 && x.r.Float64() < x.link.Loss {
			at = at.Add(x.link.rto())
		}
		at = later(at, x.last) // in order: no segment overtakes another
		x.last = at
		x.q = append(x.q, chunk{b: append([]byte(nil), seg...), at: at})
		x.queued += len(seg)
		if x.counter != nil {
			x.counter.Add(int64(len(seg)))
		}
		select {
		case x.notEmpty <- struct{}{}:
		default:
		}
	}
	return nil
}

// next waits for the head chunk's arrival and removes it; it returns
// false when the line is closed (or done ends) before that.
func (x *line) next(done <-chan struct{}) ([]byte, bool) {
	for {
		x.mu.Lock()
		if x.closed {
			x.mu.Unlock()
			return nil, false
		}
		if len(x.q) == 0 {
			x.mu.Unlock()
			select {
			case <-x.notEmpty:
				continue
			case <-done:
				return nil, false
			}
		}
		head := x.q[0]
		x.mu.Unlock()
		if wait := time.Until(head.at); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-done:
				t.Stop()
				return nil, false
			}
		}
		x.mu.Lock()
		if x.closed || len(x.q) == 0 { // closed while waiting
			x.mu.Unlock()
			return nil, false
		}
		x.q[0] = chunk{}
		x.q = x.q[1:]
		x.queued -= len(head.b)
		x.cond.Broadcast()
		x.mu.Unlock()
		return head.b, true
	}
}

func (x *line) close() {
	x.mu.Lock()
	x.closed = true
	x.q = nil
	x.cond.Broadcast()
	x.mu.Unlock()
}

// conn is a net.Conn whose two directions go through lines.
type conn struct {
	net.Conn
	out, in *line
	wg      sync.WaitGroup

	mu       sync.Mutex
	ready    []byte // arrived bytes not read yet
	readErr  error  // the socket's read error
	eof      bool   // every byte before readErr has reached ready
	deadline time.Time
	readable chan struct{}

	closeOnce sync.Once
	done      chan struct{}
}

// Write queues b for the link to the remote end. It returns when b is
// queued (the socket's send buffer, in effect), not when it arrives.
func (c *conn) Write(b []byte) (int, error) {
	select {
	case <-c.done:
		return 0, errClosed
	default:
	}
	if err := c.out.put(b); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (c *conn) pumpOut() {
	defer c.wg.Done()
	for {
		b, ok := c.out.next(c.done)
		if !ok {
			return
		}
		if _, err := c.Conn.Write(b); err != nil {
			c.out.close()
			return
		}
	}
}

// readSocket reads the socket as fast as it can and queues what arrives on
// the inbound line.
func (c *conn) readSocket() {
	defer c.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Conn.Read(buf)
		if n > 0 {
			if c.in.put(buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			// The error reaches the reader after the bytes still on the
			// line: queue a marker behind them.
			c.mu.Lock()
			c.readErr = err
			c.mu.Unlock()
			c.in.mu.Lock()
			if !c.in.closed {
				c.in.q = append(c.in.q, chunk{b: nil, at: later(c.in.last, time.Now())})
				select {
				case c.in.notEmpty <- struct{}{}:
				default:
				}
			}
			c.in.mu.Unlock()
			return
		}
	}
}

// pumpIn moves arrived chunks to the reader.
func (c *conn) pumpIn() {
	defer c.wg.Done()
	for {
		b, ok := c.in.next(c.done)
		if !ok {
			return
		}
		c.mu.Lock()
		if b == nil { // the socket's error marker
			c.eof = true
			c.mu.Unlock()
			c.signal()
			return
		}
		c.ready = append(c.ready, b...)
		c.mu.Unlock()
		c.signal()
	}
}

func (c *conn) signal() {
	select {
	case c.readable <- struct{}{}:
	default:
	}
}

func (c *conn) Read(b []byte) (int, error) {
	for {
		c.mu.Lock()
		if len(c.ready) > 0 {
			n := copy(b, c.ready)
			c.ready = c.ready[n:]
			if len(c.ready) == 0 {
				c.ready = nil
			}
			c.mu.Unlock()
			return n, nil
		}
		dl := c.deadline
		// The socket's error is reported once pumpIn has passed its marker.
		if c.eof {
			err := c.readErr
			c.mu.Unlock()
			return 0, err
		}
		c.mu.Unlock()
		select {
		case <-c.done:
			return 0, errClosed
		default:
		}
		var timeout <-chan time.Time
		var t *time.Timer
		if !dl.IsZero() {
			wait := time.Until(dl)
			if wait <= 0 {
				return 0, timeoutError{}
			}
			t = time.NewTimer(wait)
			timeout = t.C
		}
		select {
		case <-c.readable:
		case <-c.done:
			return 0, errClosed
		case <-timeout:
			return 0, timeoutError{}
		}
		if t != nil {
			t.Stop()
		}
	}
}

// SetDeadline sets the read deadline (see SetWriteDeadline).
func (c *conn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

// SetWriteDeadline does nothing: Write only queues (it waits only while
// MaxQueued bytes are on the line), and the socket must not inherit the
// deadline, or bytes released after it (a handshake's, on a slow link)
// would fail to leave.
func (c *conn) SetWriteDeadline(time.Time) error { return nil }

// SetReadDeadline bounds Read; the socket itself is always being read.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	c.signal() // a waiting Read re-checks its deadline
	return nil
}

// Close closes the socket at once: bytes still on the line are lost, as
// with go-libp2p's linger 0.
func (c *conn) Close() error {
	err := errClosed
	c.closeOnce.Do(func() {
		close(c.done)
		c.out.close()
		c.in.close()
		err = c.Conn.Close()
		c.wg.Wait()
	})
	return err
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "netem: read deadline exceeded" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// Is makes errors.Is(err, os.ErrDeadlineExceeded) hold, as for sockets.
func (timeoutError) Is(target error) bool { return target == os.ErrDeadlineExceeded }

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

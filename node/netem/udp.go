package netem

import (
	"container/heap"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ListenUDP listens like net.ListenUDP and wraps the socket
// (WrapPacketConn). Its signature is quicreuse.OverrideListenUDP's.
func (n *Node) ListenUDP(network string, laddr *net.UDPAddr) (net.PacketConn, error) {
	c, err := net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	return n.WrapPacketConn(c), nil
}

// WrapPacketConn delays, drops and rate-limits the datagrams this node
// writes, each by the link to the node listening at its destination (see
// Register). Reads are untouched: the sender's wrapper delayed them. The
// socket's own address is registered as this node's.
func (n *Node) WrapPacketConn(pc net.PacketConn) net.PacketConn {
	n.Register(pc.LocalAddr())
	c := &packetConn{PacketConn: pc, n: n, r: n.e.rand(), busy: map[endpoint]time.Time{},
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	c.wg.Add(1)
	go c.pump()
	return c
}

type datagram struct {
	b   []byte
	to  net.Addr
	at  time.Time
	seq uint64 // ties broken by write order
}

type dgHeap []datagram

func (h dgHeap) Len() int { return len(h) }
func (h dgHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h dgHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dgHeap) Push(x any)   { *h = append(*h, x.(datagram)) }
func (h *dgHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = datagram{}
	*h = old[:len(old)-1]
	return x
}

type packetConn struct {
	net.PacketConn
	n *Node

	mu     sync.Mutex
	r      *rand.Rand
	q      dgHeap
	queued int
	seq    uint64
	busy   map[endpoint]time.Time // per destination: link busy until
	lost   atomic.Int64

	wake      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// WriteTo queues p for its destination's link and returns at once; a lost
// datagram, or one that finds MaxQueued bytes waiting, is dropped silently
// (as the network would).
func (c *packetConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	select {
	case <-c.done:
		return 0, net.ErrClosed
	default:
	}
	peer, _ := c.n.peerName(addr)
	l := c.n.e.Link(c.n.name, peer)
	c.n.sent.Add(int64(len(p)))
	c.mu.Lock()
	defer c.mu.Unlock()
	if (l.Loss > 0 && c.r.Float64() < l.Loss) || c.queued+len(p) > MaxQueued {
		c.lost.Add(1)
		return len(p), nil
	}
	key, _ := addrPort(addr)
	now := time.Now()
	busy := later(c.busy[key], now).Add(l.txTime(len(p)))
	c.busy[key] = busy
	c.seq++
	heap.Push(&c.q, datagram{b: append([]byte(nil), p...), to: addr, at: busy.Add(l.delay(c.r)), seq: c.seq})
	c.queued += len(p)
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// Lost counts the datagrams dropped by the loss model or a full queue.
func (c *packetConn) Lost() int64 { return c.lost.Load() }

func (c *packetConn) pump() {
	defer c.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		c.mu.Lock()
		var wait time.Duration = time.Hour
		var due []datagram
		now := time.Now()
		for len(c.q) > 0 && !c.q[0].at.After(now) {
			d := heap.Pop(&c.q).(datagram)
			c.queued -= len(d.b)
			due = append(due, d)
		}
		if len(c.q) > 0 {
			wait = c.q[0].at.Sub(now)
		}
		c.mu.Unlock()
		for _, d := range due {
			if _, err := c.PacketConn.WriteTo(d.b, d.to); err != nil {
				select {
				case <-c.done:
					return
				default: // one unreachable destination does not stop the others
				}
			}
		}
		if len(due) > 0 {
			continue
		}
		t.Reset(wait)
		select {
		case <-t.C:
		case <-c.wake:
		case <-c.done:
			return
		}
	}
}

// Close stops the pump (datagrams still queued are lost) and closes the
// socket.
func (c *packetConn) Close() error {
	err := net.ErrClosed
	c.closeOnce.Do(func() {
		close(c.done)
		err = c.PacketConn.Close()
		c.wg.Wait()
	})
	return err
}

// The socket options quic-go sets on a *net.UDPConn pass through.

func (c *packetConn) SetReadBuffer(n int) error {
	if s, ok := c.PacketConn.(interface{ SetReadBuffer(int) error }); ok {
		return s.SetReadBuffer(n)
	}
	return syscall.ENOTSUP
}

func (c *packetConn) SetWriteBuffer(n int) error {
	if s, ok := c.PacketConn.(interface{ SetWriteBuffer(int) error }); ok {
		return s.SetWriteBuffer(n)
	}
	return syscall.ENOTSUP
}

func (c *packetConn) SyscallConn() (syscall.RawConn, error) {
	if s, ok := c.PacketConn.(interface {
		SyscallConn() (syscall.RawConn, error)
	}); ok {
		return s.SyscallConn()
	}
	return nil, syscall.ENOTSUP
}

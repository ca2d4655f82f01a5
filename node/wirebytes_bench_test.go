package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// BenchmarkShamirWireBytes: warm Shamir sums among n = 20 owner hosts and
// a coordinating user, as node.New builds them, on loopback, with every
// connection passing through a byte-counting proxy in front of the host it
// was dialled to (TCP: a TCP relay; QUIC: a UDP relay), optionally adding
// a one-way delay per direction.
//
// Reported per warm sum:
//
//   - wireB/sum: bytes the transport carried (TCP payload: TLS records;
//     UDP payload: QUIC packets), both directions, all connections, from
//     the sum's start until gossipsub's gossip about anything published
//     has been sent (4 s after the last sum), minus the idle traffic
//     (heartbeats of the control topic the hosts joined, as in a session)
//     measured on the same hosts over 2 s before the sums. IP, TCP and UDP
//     headers are not counted.
//   - protoB/sum: the protocol's own bytes: direct frame payloads sent to
//     other hosts, plus each control-topic publication's payload once per
//     owner it is meant for (pubs/sum counts publications; the coordinator
//     sends SumStart and SumResult on the sum streams, so 0).
//   - wire/proto: wireB/sum divided by protoB/sum (goal: <= 2).
//   - wireB/owner: wireB/sum over the n owners.
//   - coordWireB/sum, coordProtoB/sum, coord-wire/proto: the same for the
//     coordinator's own connections (what its proxy carried) and its own
//     frames, sent and received.
//   - frames/sum of B/frame bytes each, startB: one SumStart's payload.
//   - ns/op: the warm sum's latency; with delay>0 also delays/sum, the
//     latency in one-way delays.
//
// n = 60 runs at delay 0 only (60 hosts in one process; the committee is
// the default 32).
//
// Run:
//
//	go test -run XXX -bench ShamirWireBytes -benchtime 10x ./node
func BenchmarkShamirWireBytes(b *testing.B) {
	for _, tr := range []string{"tcp", "quic"} {
		// 100 ms: long enough that the one-way delays, not the 20 hosts'
		// CPU time on a shared machine, dominate the sum's latency.
		for _, delay := range []time.Duration{0, 25 * time.Millisecond, 100 * time.Millisecond} {
			b.Run(fmt.Sprintf("%s/n=20/delay=%v", tr, delay), func(b *testing.B) { benchWireBytes(b, tr, 20, delay) })
		}
		b.Run(fmt.Sprintf("%s/n=60/delay=0s", tr), func(b *testing.B) { benchWireBytes(b, tr, 60, 0) })
	}
}

// countTr counts what the protocol hands the transport.
type countTr struct {
	*Host
	bytes  *atomic.Int64
	own    *atomic.Int64 // this host's bytes alone, if set
	owners int           // recipients of a publication
	stats  *trStats
}

// pubRecord is one publication: its size and when, since the timed loop
// started.
type pubRecord struct {
	size int
	at   time.Duration
}

// trStats splits what countTr saw into direct frames and publications.
type trStats struct {
	mu                 sync.Mutex
	frames, frameBytes int
	startBytes         int // the last SumStart's payload
	pubs               []pubRecord
	recordPublications bool
	start              time.Time
}

func (c countTr) Send(ctx context.Context, to protocol.PeerID, protoID string, data []byte) error {
	err := c.Host.Send(ctx, to, protoID, data)
	if err == nil && to != c.Host.ID() {
		c.bytes.Add(int64(len(data)))
		if c.own != nil {
			c.own.Add(int64(len(data)))
		}
		c.stats.mu.Lock()
		c.stats.frames++
		c.stats.frameBytes += len(data)
		if c.own != nil {
			if e, err := wire.Unmarshal(data, wire.MaxSumFrameBytes); err == nil && e.GetSumStart() != nil {
				c.stats.startBytes = len(data)
			}
		}
		c.stats.mu.Unlock()
	}
	return err
}

func (c countTr) Publish(ctx context.Context, topic string, data []byte) error {
	err := c.Host.Publish(ctx, topic, data)
	if err == nil {
		c.bytes.Add(int64(len(data) * c.owners))
		if c.own != nil {
			c.own.Add(int64(len(data) * c.owners))
		}
		c.stats.mu.Lock()
		if c.stats.recordPublications {
			c.stats.pubs = append(c.stats.pubs, pubRecord{size: len(data), at: time.Since(c.stats.start)})
		}
		c.stats.mu.Unlock()
	}
	return err
}

func benchWireBytes(b *testing.B, transport string, n int, delay time.Duration) {
	log := hclog.NewNullLogger()
	p := securesum.DefaultParams()
	p.Method = securesum.Shamir
	p.Timeout = 30 * time.Second
	var wireBytes, protoBytes, coordWire, coordProto atomic.Int64
	var stats trStats
	listen := "/ip4/127.0.0.1/tcp/0"
	if transport == "quic" {
		listen = "/ip4/127.0.0.1/udp/0/quic-v1"
	}
	type node struct {
		h     *Host
		proxy string // the full multiaddr others dial
	}
	mk := func(name string, expected int, counters ...*atomic.Int64) node {
		key := filepath.Join(b.TempDir(), name)
		if _, err := GenerateKey(key); err != nil {
			b.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.KeyFile, cfg.ListenAddrs, cfg.ExpectedPeers = key, []string{listen}, expected
		h, err := New(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { h.Close() })
		return node{h: h, proxy: startProxy(b, h, transport, delay, append(counters, &wireBytes)...)}
	}
	env := func(h *Host, loop *engine.Driver, seed uint64, own *atomic.Int64) securesum.Env {
		post := protocol.NewOutbox(countTr{Host: h, bytes: &protoBytes, own: own, owners: n, stats: &stats}, 30*time.Second, log)
		b.Cleanup(post.Close)
		return securesum.PosterEnv(h.ID(), post, loop, rng.Seeded(seed), log)
	}
	// Owners dial the user, so the user's proxy carries every byte of the
	// coordinator's connections.
	user := mk("user", n+8, &coordWire)
	userLoop := engine.NewDriver(engine.Config{})
	coord := securesum.NewCoordinator(env(user.h, userLoop, 1<<40, &coordProto), p)
	user.h.SetHandler(func(m protocol.Message) {
		if e, err := wire.Unmarshal(m.Data, wire.MaxSumFrameBytes); err == nil {
			coordProto.Add(int64(len(m.Data)))
			userLoop.Do(func() { coord.Handle(m.From, e) })
		}
	})
	nodes := make([]node, n)
	for i := range nodes {
		nodes[i] = mk(fmt.Sprint("o", i), n+8)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := nodes[i].h.Connect(ctx, user.proxy)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
	roster := make([]protocol.PeerID, n)
	for i, o := range nodes {
		roster[i] = o.h.ID()
	}
	slices.Sort(roster)
	want := 0.0
	for i, o := range nodes {
		for _, q := range nodes {
			o.h.AddAddrs(q.h.ID(), []string{q.proxy})
		}
		loop := engine.NewDriver(engine.Config{})
		party := securesum.NewParty(env(o.h, loop, uint64(i), nil), p)
		party.SetRoster(roster)
		v := []float64{float64(i%7) / 8, 1}
		want += v[0]
		o.h.SetHandler(func(m protocol.Message) {
			e, err := wire.Unmarshal(m.Data, wire.MaxControlBytes)
			if err != nil {
				return
			}
			loop.Do(func() {
				if s := e.GetSumStart(); s != nil {
					party.Begin(e.GetHeader(), s, roster, []byte("beacon"), user.h.ID(), v)
					return
				}
				party.Handle(m.From, e)
			})
		})
		if err := o.h.Join(wire.TopicControl); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := user.h.WaitTopicPeers(ctx, wire.TopicControl, n); err != nil {
		b.Fatal(err)
	}
	run := func(round int) {
		done := make(chan []float64, 1)
		h := &wire.Header{Version: wire.Version, Session: "bench", Round: uint32(round)}
		var err error
		userLoop.Call(context.Background(), func() {
			err = coord.Sum(securesum.Request{Header: h, Purpose: "err", Roster: roster, Length: 2, Beacon: []byte("beacon")}, func(v []float64, _ int, err error) {
				if err != nil {
					b.Error(err)
				}
				done <- v
			})
		})
		if err != nil {
			b.Fatal(err)
		}
		select {
		case v := <-done:
			if v == nil || math.Abs(v[0]-want) > float64(n)/(1<<24) {
				b.Fatalf("total %v, want %v", v, want)
			}
		case <-time.After(p.Cap() + 2*time.Minute): // a first sum may be extended up to the cap (60 hosts' handshakes on a loaded machine)
			b.Fatalf("sum of round %d timed out (first sum: the hosts' connections are opened by it)", round)
		}
	}
	// Warm-up sums open the owner-to-owner connections and let the
	// gossipsub mesh settle. With n above the committee size each sum
	// (round) draws another committee of c: a dealer-member pair is then
	// connected by a given warm-up with probability c/n, so 8 of them
	// leave (1-c/n)^8 of the pairs unconnected (0.2 % at n = 60, c = 32;
	// a session opens the next committee's connections ahead of its sum,
	// protocol.Preparer). newConns/sum counts what the timed sums still
	// opened.
	warm := 2
	if n > p.Committee {
		warm = 8
	}
	for r := 1; r <= warm; r++ {
		run(r)
	}
	conns := func() (k int) {
		for _, o := range append(nodes, user) {
			k += len(o.h.Host().Network().Conns())
		}
		return k
	}
	const idleFor = 2 * time.Second
	w0, cw0 := wireBytes.Load(), coordWire.Load()
	time.Sleep(idleFor)
	idleRate := float64(wireBytes.Load()-w0) / idleFor.Seconds()
	coordIdleRate := float64(coordWire.Load()-cw0) / idleFor.Seconds()
	w0, p0, cw0, cp0 := wireBytes.Load(), protoBytes.Load(), coordWire.Load(), coordProto.Load()
	stats.mu.Lock()
	start := time.Now()
	stats.frames, stats.frameBytes, stats.recordPublications, stats.start = 0, 0, true, start
	stats.mu.Unlock()
	c0 := conns()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run(warm + 1 + i)
	}
	b.StopTimer()
	b.ReportMetric(float64(conns()-c0)/2/float64(b.N), "newConns/sum") // each connection has two ends here
	elapsed := time.Since(start)
	// Gossipsub announces a message id (IHAVE) to non-mesh peers at the
	// next heartbeats (1 s apart, for 3 of them): wait them out, so the
	// sums' gossip is counted, and subtract the idle traffic of the wait.
	const gossipWindow = 4 * time.Second
	time.Sleep(gossipWindow)
	since := time.Since(start).Seconds()
	wireSum := (float64(wireBytes.Load()-w0) - idleRate*since) / float64(b.N)
	proto := float64(protoBytes.Load()-p0) / float64(b.N)
	coordWireSum := (float64(coordWire.Load()-cw0) - coordIdleRate*since) / float64(b.N)
	coordProtoSum := float64(coordProto.Load()-cp0) / float64(b.N)
	stats.mu.Lock()
	stats.recordPublications = false
	pubs, frames, frameBytes, startBytes := stats.pubs, stats.frames, stats.frameBytes, stats.startBytes
	stats.mu.Unlock()
	b.ReportMetric(float64(len(pubs))/float64(b.N), "pubs/sum")
	b.ReportMetric(float64(frames)/float64(b.N), "frames/sum")
	b.ReportMetric(float64(frameBytes)/float64(max(frames, 1)), "B/frame")
	b.ReportMetric(float64(startBytes), "startB")
	b.ReportMetric(wireSum, "wireB/sum")
	b.ReportMetric(proto, "protoB/sum")
	b.ReportMetric(wireSum/proto, "wire/proto")
	b.ReportMetric(wireSum/float64(n), "wireB/owner")
	b.ReportMetric(coordWireSum, "coordWireB/sum")
	b.ReportMetric(coordProtoSum, "coordProtoB/sum")
	b.ReportMetric(coordWireSum/coordProtoSum, "coord-wire/proto")
	if delay > 0 {
		b.ReportMetric(float64(elapsed)/float64(b.N)/float64(delay), "delays/sum")
	}
}

// startProxy relays connections to h's listen address through a local
// port, counting every byte into each of counts and delaying each
// direction by delay, and returns the proxy's full multiaddr.
func startProxy(b *testing.B, h *Host, transport string, delay time.Duration, counts ...*atomic.Int64) string {
	count := &multiCount{counts}
	var target net.Addr
	for _, a := range h.Host().Addrs() {
		if transportOf(a) != transport {
			continue
		}
		ip, err := a.ValueForProtocol(ma.P_IP4)
		if err != nil {
			b.Fatal(err)
		}
		if transport == "tcp" {
			port, _ := a.ValueForProtocol(ma.P_TCP)
			target, err = net.ResolveTCPAddr("tcp", net.JoinHostPort(ip, port))
		} else {
			port, _ := a.ValueForProtocol(ma.P_UDP)
			target, err = net.ResolveUDPAddr("udp", net.JoinHostPort(ip, port))
		}
		if err != nil {
			b.Fatal(err)
		}
		break
	}
	if target == nil {
		b.Fatalf("no %s listen address", transport)
	}
	var port int
	switch transport {
	case "tcp":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		p := &tcpProxy{ln: ln, target: target.String(), delay: delay, count: count}
		go p.serve()
		b.Cleanup(p.close)
		port = ln.Addr().(*net.TCPAddr).Port
		return fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/%s", port, h.ID())
	default:
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			b.Fatal(err)
		}
		p := &udpProxy{c: c, target: target.(*net.UDPAddr), delay: delay, count: count, peers: map[string]*net.UDPConn{}}
		go p.serve()
		b.Cleanup(p.close)
		port = c.LocalAddr().(*net.UDPAddr).Port
		return fmt.Sprintf("/ip4/127.0.0.1/udp/%d/quic-v1/p2p/%s", port, h.ID())
	}
}

// delayed forwards chunks to w after delay, in order.
type delayed struct {
	at   time.Time
	data []byte
}

func pipeDelayed(delay time.Duration, in <-chan delayed, write func([]byte) error) {
	for d := range in {
		if wait := time.Until(d.at.Add(delay)); wait > 0 {
			time.Sleep(wait)
		}
		if write(d.data) != nil {
			for range in { // drain so the reader never blocks
			}
			return
		}
	}
}

type tcpProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	count  *multiCount
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
	wg     sync.WaitGroup
}

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			u.Close()
			return
		}
		p.conns = append(p.conns, c, u)
		p.wg.Add(2)
		p.mu.Unlock()
		go p.relay(c, u)
		go p.relay(u, c)
	}
}

// relay copies src to dst, counting and delaying.
func (p *tcpProxy) relay(src, dst net.Conn) {
	defer p.wg.Done()
	ch := make(chan delayed, 4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipeDelayed(p.delay, ch, func(b []byte) error { _, err := dst.Write(b); return err })
		if tc, ok := dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.count.Add(int64(n))
			ch <- delayed{at: time.Now(), data: append([]byte(nil), buf[:n]...)}
		}
		if err != nil {
			break
		}
	}
	close(ch)
	<-done
}

func (p *tcpProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

type udpProxy struct {
	c      *net.UDPConn
	target *net.UDPAddr
	delay  time.Duration
	count  *multiCount
	mu     sync.Mutex
	peers  map[string]*net.UDPConn // client address -> upstream socket
	wg     sync.WaitGroup
	closed bool
}

func (p *udpProxy) serve() {
	toTarget := map[string]chan delayed{}
	defer func() {
		for _, ch := range toTarget {
			close(ch)
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, from, err := p.c.ReadFromUDP(buf)
		if err != nil {
			return
		}
		p.count.Add(int64(n))
		key := from.String()
		ch, ok := toTarget[key]
		if !ok {
			u, err := net.DialUDP("udp", nil, p.target)
			if err != nil {
				continue
			}
			p.mu.Lock()
			if p.closed {
				p.mu.Unlock()
				u.Close()
				return
			}
			p.peers[key] = u
			p.wg.Add(2)
			p.mu.Unlock()
			ch = make(chan delayed, 4096)
			toTarget[key] = ch
			go func() {
				defer p.wg.Done()
				pipeDelayed(p.delay, ch, func(b []byte) error { _, err := u.Write(b); return err })
			}()
			back := make(chan delayed, 4096)
			go func() {
				defer p.wg.Done()
				done := make(chan struct{})
				go func() {
					defer close(done)
					pipeDelayed(p.delay, back, func(b []byte) error { _, err := p.c.WriteToUDP(b, from); return err })
				}()
				rb := make([]byte, 64<<10)
				for {
					m, err := u.Read(rb)
					if err != nil {
						if errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) {
							break
						}
						if !strings.Contains(err.Error(), "refused") {
							break
						}
						continue
					}
					p.count.Add(int64(m))
					back <- delayed{at: time.Now(), data: append([]byte(nil), rb[:m]...)}
				}
				close(back)
				<-done
			}()
		}
		ch <- delayed{at: time.Now(), data: append([]byte(nil), buf[:n]...)}
	}
}

func (p *udpProxy) close() {
	p.c.Close()
	p.mu.Lock()
	p.closed = true
	for _, u := range p.peers {
		u.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// BenchmarkDirectWire isolates direct messages between two hosts, through
// the same counting (and delaying) proxy as BenchmarkShamirWireBytes. One
// op is a burst of 4 frames of 51 bytes (the mean secure-sum frame at
// n = 20) sent back to back to one peer, as protocol.Outbox sends them,
// waiting until all 4 are handled. Reported:
//
//   - wire/proto: transport bytes per payload byte;
//
//   - send-µs: how long the 4 Sends took to return;
//
//   - first-ms, last-ms: from the first Send to the handling of the
//     first and the last frame (with delay > 0, in one-way delays:
//     first-delays, last-delays).
//
//     go test -run XXX -bench DirectWire -benchtime 200x ./node
func BenchmarkDirectWire(b *testing.B) {
	for _, tr := range []string{"tcp", "quic"} {
		for _, delay := range []time.Duration{0, 25 * time.Millisecond} {
			b.Run(fmt.Sprintf("%s/delay=%v", tr, delay), func(b *testing.B) { benchDirectWire(b, tr, delay) })
		}
	}
}

func benchDirectWire(b *testing.B, transport string, delay time.Duration) {
	listen := "/ip4/127.0.0.1/tcp/0"
	if transport == "quic" {
		listen = "/ip4/127.0.0.1/udp/0/quic-v1"
	}
	var wireBytes atomic.Int64
	mk := func(name string) *Host {
		key := filepath.Join(b.TempDir(), name)
		if _, err := GenerateKey(key); err != nil {
			b.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.KeyFile, cfg.ListenAddrs = key, []string{listen}
		h, err := New(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { h.Close() })
		return h
	}
	x, y := mk("x"), mk("y")
	proxy := startProxy(b, y, transport, delay, &wireBytes)
	ctx := context.Background()
	if err := x.Connect(ctx, proxy); err != nil {
		b.Fatal(err)
	}
	const burst = 4
	got := make(chan time.Time, burst)
	y.SetHandler(func(protocol.Message) { got <- time.Now() })
	payload := make([]byte, 51)
	op := func() (send, first, last time.Duration) {
		start := time.Now()
		for i := 0; i < burst; i++ {
			if err := x.Send(ctx, y.ID(), wire.ProtoShamir, payload); err != nil {
				b.Fatal(err)
			}
		}
		send = time.Since(start)
		for i := 0; i < burst; i++ {
			at := <-got
			if i == 0 {
				first = at.Sub(start)
			}
			last = at.Sub(start)
		}
		return
	}
	op() // opens the stream
	time.Sleep(2*delay + 50*time.Millisecond)
	const idleFor = time.Second
	w0 := wireBytes.Load()
	time.Sleep(idleFor)
	idleRate := float64(wireBytes.Load()-w0) / idleFor.Seconds()
	var send, first, last time.Duration
	w0 = wireBytes.Load()
	start := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, f, l := op()
		send, first, last = send+s, first+f, last+l
	}
	b.StopTimer()
	time.Sleep(2*delay + 50*time.Millisecond)
	wireB := float64(wireBytes.Load()-w0) - idleRate*time.Since(start).Seconds()
	n := float64(b.N)
	b.ReportMetric(wireB/(n*burst*float64(len(payload))), "wire/proto")
	b.ReportMetric(float64(send.Microseconds())/n, "send-µs")
	b.ReportMetric(float64(first.Microseconds())/n/1000, "first-ms")
	b.ReportMetric(float64(last.Microseconds())/n/1000, "last-ms")
	if delay > 0 {
		b.ReportMetric(float64(first)/n/float64(delay), "first-delays")
		b.ReportMetric(float64(last)/n/float64(delay), "last-delays")
	}
}

// multiCount adds every count to several counters.
type multiCount struct{ cs []*atomic.Int64 }

func (m *multiCount) Add(n int64) {
	for _, c := range m.cs {
		c.Add(n)
	}
}

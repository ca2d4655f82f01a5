package memnet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ppboost/ppboost/protocol"
)

type trace struct {
	mu  sync.Mutex
	got []string
}

func (t *trace) add(s string) { t.mu.Lock(); t.got = append(t.got, s); t.mu.Unlock() }
func (t *trace) len() int     { t.mu.Lock(); defer t.mu.Unlock(); return len(t.got) }

func cluster(t *testing.T, opts Options, n int) (*Network, []*Endpoint, *trace) {
	t.Helper()
	net := New(opts)
	t.Cleanup(func() { net.Close() })
	tr := &trace{}
	eps := make([]*Endpoint, n)
	for i := range eps {
		e, err := net.Join(protocol.PeerID(fmt.Sprintf("p%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		id := e.ID()
		e.SetHandler(func(m protocol.Message) {
			tr.add(fmt.Sprintf("%s<-%s %s%s %s @%v", id, m.From, m.Topic, m.Protocol, m.Data, net.Clock().Now().Sub(epoch)))
		})
		e.Join("t")
		eps[i] = e
	}
	return net, eps, tr
}

func TestDeterministicDeliveryAndOrder(t *testing.T) {
	run := func() []string {
		net, eps, tr := cluster(t, Options{Seed: 7, Deterministic: true, Delay: 10 * time.Millisecond, Jitter: 5 * time.Millisecond}, 4)
		for i, e := range eps {
			e.Publish(context.Background(), "t", []byte(fmt.Sprint("pub", i)))
			e.Send(context.Background(), eps[(i+1)%4].ID(), "/x", []byte(fmt.Sprint("dm", i)))
		}
		if err := net.RunUntil(func() bool { return false }, time.Second); !errors.Is(err, ErrIdle) {
			t.Fatalf("run: %v", err)
		}
		return tr.got
	}
	a, b := run(), run()
	if len(a) != 4*3+4 {
		t.Fatalf("%d deliveries, want 16", len(a))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("runs differ at %d: %q vs %q", i, a[i], b[i])
		}
	}
}

func TestVirtualTimeAndTimers(t *testing.T) {
	net, eps, tr := cluster(t, Options{Deterministic: true, Delay: 50 * time.Millisecond}, 2)
	fired := time.Duration(0)
	c := net.Clock()
	start := c.Now()
	c.AfterFunc(200*time.Millisecond, func() { fired = c.Now().Sub(start) })
	stopped := c.AfterFunc(100*time.Millisecond, func() { t.Error("stopped timer fired") })
	if !stopped.Stop() {
		t.Fatal("Stop returned false for a pending timer")
	}
	eps[0].Send(context.Background(), "p1", "/x", []byte("a"))
	net.RunUntil(func() bool { return fired > 0 }, time.Hour)
	if fired != 200*time.Millisecond || tr.len() != 1 {
		t.Fatalf("timer at %v, %d deliveries", fired, tr.len())
	}
	if err := net.RunUntil(func() bool { return false }, time.Hour); !errors.Is(err, ErrIdle) {
		t.Fatal(err)
	}
	c.AfterFunc(2*time.Hour, func() {})
	if err := net.RunUntil(func() bool { return false }, time.Hour); !errors.Is(err, ErrTimeout) {
		t.Fatalf("want ErrTimeout, got %v", err)
	}
}

func TestPartitionKillDropNext(t *testing.T) {
	net, eps, tr := cluster(t, Options{Deterministic: true, Delay: time.Millisecond}, 3)
	ctx := context.Background()
	net.Partition([]protocol.PeerID{"p0", "p1"}, []protocol.PeerID{"p2"})
	eps[0].Publish(ctx, "t", []byte("x"))
	net.RunFor(time.Second)
	if tr.len() != 1 {
		t.Fatalf("partitioned publish reached %d peers, want 1", tr.len())
	}
	net.Heal()
	net.Kill("p1")
	eps[0].Publish(ctx, "t", []byte("y"))
	eps[1].Send(ctx, "p2", "/x", []byte("from the dead"))
	net.RunFor(time.Second)
	if tr.len() != 2 {
		t.Fatalf("after kill: %d deliveries, want 2", tr.len())
	}
	net.DropNext("p0", "p2", 2)
	for i := 0; i < 3; i++ {
		eps[0].Send(ctx, "p2", "/x", []byte{byte(i)})
	}
	net.RunFor(time.Second)
	if tr.len() != 3 {
		t.Fatalf("DropNext(2) of 3: %d deliveries, want 3", tr.len())
	}
	if s := net.Stats("p0"); s.Dropped != 1+1+2 || s.MsgsSent != 2+2+3 { // partition, kill, DropNext(2)
		t.Fatalf("stats %+v", s)
	}
	if err := eps[0].Send(ctx, "nobody", "/x", nil); !errors.Is(err, ErrUnknownPeer) {
		t.Fatalf("send to unknown peer: %v", err)
	}
	if err := eps[0].Publish(ctx, "t", make([]byte, 2<<20)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized publish: %v", err)
	}
}

// TestDropRate checks the empirical loss against the binomial: 20,000
// messages at 30% loss, tolerance 5 sd = 5*sqrt(n p (1-p)) ~ 324.
func TestDropRate(t *testing.T) {
	net, eps, tr := cluster(t, Options{Seed: 3, Deterministic: true}, 2)
	net.SetLink("p0", "p1", LinkParams{DropRate: 0.3})
	const n = 20000
	for i := 0; i < n; i++ {
		eps[0].Send(context.Background(), "p1", "/x", nil)
	}
	net.RunFor(time.Second)
	lost := float64(n - tr.len())
	if sd := math.Sqrt(n * 0.3 * 0.7); math.Abs(lost-0.3*n) > 5*sd {
		t.Fatalf("lost %v of %d, want %v +- %v", lost, n, 0.3*n, 5*sd)
	}
}

func TestValidators(t *testing.T) {
	net, eps, tr := cluster(t, Options{Deterministic: true}, 3)
	eps[1].SetTopicValidator("t", func(from protocol.PeerID, _ []byte) protocol.Verdict {
		if from == "p2" {
			return protocol.Reject
		}
		return protocol.Ignore
	})
	eps[2].Publish(context.Background(), "t", []byte("a"))
	eps[0].Publish(context.Background(), "t", []byte("b"))
	net.RunFor(time.Second)
	if s := net.Stats("p1"); s.Rejected != 1 || s.Ignored != 1 || s.MsgsRecv != 0 {
		t.Fatalf("validator stats %+v", s)
	}
	if tr.len() != 2 { // p0 and p2 each got the other's publication
		t.Fatalf("%d deliveries", tr.len())
	}
}

func TestRealTimeConcurrentNoLeaks(t *testing.T) {
	defer goleak.VerifyNone(t)
	net := New(Options{Delay: time.Millisecond})
	var mu sync.Mutex
	got := 0
	eps := make([]*Endpoint, 8)
	for i := range eps {
		eps[i], _ = net.Join(protocol.PeerID(fmt.Sprint("p", i)))
		eps[i].SetHandler(func(protocol.Message) { mu.Lock(); got++; mu.Unlock() })
		eps[i].Join("t")
	}
	var wg sync.WaitGroup
	for i := range eps {
		wg.Add(1)
		go func(e *Endpoint) {
			defer wg.Done()
			for k := 0; k < 50; k++ {
				e.Publish(context.Background(), "t", []byte("x"))
				e.Send(context.Background(), "p0", "/x", []byte("y"))
			}
		}(eps[i])
	}
	wg.Wait()
	want := 8*50*7 + 8*50
	if err := net.RunUntil(func() bool { mu.Lock(); defer mu.Unlock(); return got == want }, 5*time.Second); err != nil {
		t.Fatalf("delivered %d of %d: %v", got, want, err)
	}
	fired := make(chan struct{})
	net.Clock().AfterFunc(time.Millisecond, func() { close(fired) })
	<-fired
	if err := eps[0].WaitTopicPeers(context.Background(), "t", 7); err != nil {
		t.Fatal(err)
	}
	net.Close()
	net.Close()
}

func BenchmarkDirect(b *testing.B) {
	for _, peers := range []int{10000} {
		b.Run(fmt.Sprintf("peers=%d", peers), func(b *testing.B) {
			net := New(Options{Deterministic: true, Delay: time.Millisecond})
			eps := make([]*Endpoint, peers)
			for i := range eps {
				eps[i], _ = net.Join(protocol.PeerID(fmt.Sprintf("p%05d", i)))
				eps[i].SetHandler(func(protocol.Message) {})
			}
			payload := make([]byte, 64)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				eps[i%peers].Send(context.Background(), eps[(i*7+1)%peers].ID(), "/x", payload)
				if i%1024 == 1023 {
					net.RunUntil(func() bool { return false }, time.Hour)
				}
			}
			net.RunUntil(func() bool { return false }, time.Hour)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

package engine

import (
	"context"
	"testing"
	"time"
)

// BenchmarkDriverDeliver is the cost of one inbound message's event:
// queued by a transport goroutine and run, inline (the in-memory network)
// or on the worker (a real node; the worker starts once per burst).
func BenchmarkDriverDeliver(b *testing.B) {
	for _, m := range []struct {
		name string
		mode Mode
	}{{"inline", ModeInline}, {"worker", ModeWorker}} {
		b.Run(m.name, func(b *testing.B) {
			d := NewDriver(Config{Mode: m.mode, Clock: &handClock{}, Inbox: 1 << 20})
			defer d.Close()
			n := 0
			f := func() { n++ }
			b.ReportAllocs()
			for b.Loop() {
				for !d.Deliver(f) {
				}
			}
			d.Call(context.Background(), func() {})
			if n != b.N {
				b.Fatalf("ran %d of %d", n, b.N)
			}
		})
	}
}

// BenchmarkDriverTimer is the cost of arming and stopping a timer (what an
// owner does for its idle timer on every message).
func BenchmarkDriverTimer(b *testing.B) {
	for _, m := range []struct {
		name string
		mode Mode
	}{{"inline", ModeInline}, {"worker", ModeWorker}} {
		b.Run(m.name, func(b *testing.B) {
			d := NewDriver(Config{Mode: m.mode, Clock: RealClock{}})
			defer d.Close()
			b.ReportAllocs()
			for b.Loop() {
				d.AfterFunc(time.Hour, func() {}).Stop()
			}
		})
	}
}

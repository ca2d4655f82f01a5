package memnet

import (
	"slices"
	"strconv"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

// TestQueueOrder interleaves random pushes and pops and checks every pop
// against a reference minimum, with many ties in time (broken by seq) and
// slots reused through the free list.
func TestQueueOrder(t *testing.T) {
	r := rng.ForName(t.Name())
	var q queue
	var ref []item                 // the queued (at, seq) pairs
	order := func(a, b item) int { // seqs are unique: never equal
		if a.before(b) {
			return -1
		}
		return 1
	}
	payload := func(seq uint64) event {
		return event{kind: evWake, name: strconv.FormatUint(seq, 10)}
	}
	popCheck := func(step int) {
		t.Helper()
		best := slices.MinFunc(ref, order)
		ref = slices.DeleteFunc(ref, func(x item) bool { return x.seq == best.seq })
		at, ev := q.pop()
		if at != best.at || ev.name != payload(best.seq).name {
			t.Fatalf("step %d: popped (%d, seq %s), want (%d, seq %d)", step, at, ev.name, best.at, best.seq)
		}
	}
	seq := uint64(0)
	for step := 0; step < 100000; step++ {
		if r.IntN(3) < 2 || len(ref) == 0 { // grows on average
			seq++
			at := r.Int64N(64) // few distinct times: many ties
			q.push(at, seq, payload(seq))
			ref = append(ref, item{at: at, seq: seq})
		} else {
			popCheck(step)
		}
		if len(ref) > 1000 { // drain now and then: keeps the reference scan cheap and reuses slots
			for len(ref) > 0 {
				popCheck(step)
			}
		}
	}
	for len(ref) > 0 {
		popCheck(-1)
	}
	if q.len() != 0 {
		t.Fatalf("queue holds %d after the reference emptied", q.len())
	}
	if len(q.slots) > 1001 {
		t.Fatalf("slab grew to %d slots for at most 1001 live events: free list not reused", len(q.slots))
	}
	for i, s := range q.slots {
		if s.kind != 0 || s.from != nil || s.to != nil || s.tm != nil || s.data != nil || s.name != "" {
			t.Fatalf("slot %d still references a popped event", i)
		}
	}
}

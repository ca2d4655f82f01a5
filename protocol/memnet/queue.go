package memnet

import "github.com/ppboost/ppboost/protocol"

// eventKind says what an event does when it comes due.
type eventKind uint8

const (
	evDeliver eventKind = iota + 1 // hand a message to the endpoint to
	evTimer                        // run an AfterFunc callback
	evWake                         // nothing; lets the real-time loop re-check RunUntil conditions
)

// event is the payload of one queued event. Events live in a slab and are
// referred to by index from the heap, so that sifting moves 24-byte items
// and a delivery costs no allocation once the slab has grown.
type event struct {
	kind  eventKind
	topic bool      // evDeliver: name is a topic, else a protocol id
	from  *Endpoint // evDeliver: author (and whose Dropped counter a loss increments)
	to    *Endpoint // evDeliver: receiver
	name  string    // evDeliver: topic or protocol id
	data  []byte    // evDeliver: payload
	// served: evDeliver to a busy peer (SetProcessing) whose processing
	// was already scheduled; it runs when due.
	served bool
	tm     *timer // evTimer
}

// message is the delivery as the receiver's handler sees it.
func (ev *event) message() protocol.Message {
	m := protocol.Message{From: ev.from.id, Data: ev.data}
	if ev.topic {
		m.Topic = ev.name
	} else {
		m.Protocol = ev.name
	}
	return m
}

// item orders events by due time, then by the sequence number handed out
// when they were queued: two events due at the same instant run in the order
// they were created, which makes a deterministic run reproducible.
type item struct {
	at   int64 // nanoseconds on the network's time line
	seq  uint64
	slot int32
}

func (a item) before(b item) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// queue is a binary min-heap of items over a slab of events with a free
// list. It is written out rather than built on container/heap because
// heap.Push takes an interface and would allocate once per message.
// Not safe for concurrent use; the Network's mutex guards it.
type queue struct {
	heap  []item
	slots []event
	free  []int32
}

func (q *queue) len() int { return len(q.heap) }

// push queues ev at time at with sequence number seq.
func (q *queue) push(at int64, seq uint64, ev event) {
	var s int32
	if k := len(q.free); k > 0 {
		s = q.free[k-1]
		q.free = q.free[:k-1]
		q.slots[s] = ev
	} else {
		s = int32(len(q.slots))
		q.slots = append(q.slots, ev)
	}
	q.heap = append(q.heap, item{at: at, seq: seq, slot: s})
	q.up(len(q.heap) - 1)
}

// peek returns the earliest item; the queue must not be empty.
func (q *queue) peek() item { return q.heap[0] }

// pop removes the earliest event and returns it with its due time; the queue
// must not be empty. The slot is cleared so that the queue keeps no
// reference to delivered payloads.
func (q *queue) pop() (int64, event) {
	top := q.heap[0]
	last := len(q.heap) - 1
	q.heap[0] = q.heap[last]
	q.heap = q.heap[:last]
	if last > 0 {
		q.down(0)
	}
	ev := q.slots[top.slot]
	q.slots[top.slot] = event{}
	q.free = append(q.free, top.slot)
	return top.at, ev
}

// reset drops every event.
func (q *queue) reset() { *q = queue{} }

func (q *queue) up(i int) {
	h := q.heap
	x := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !x.before(h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}

func (q *queue) down(i int) {
	h := q.heap
	n := len(h)
	x := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].before(h[c]) {
			c = r
		}
		if !h[c].before(x) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = x
}

// target is the peer an event runs on (nil for the network's own timers
// and wakes).
func (ev *event) target() *Endpoint {
	switch ev.kind {
	case evDeliver:
		return ev.to
	case evTimer:
		return ev.tm.owner
	}
	return nil
}

package engine

import "time"

// Out collects the effects of one transition. A machine written as methods
// (a role with sub-machines: sessions own secure-sum parties and
// coordinators) writes into one Out as it decides, and its Receive or Fire
// returns Take(): the effects come out in the order they were decided, as
// plain values a table test compares.
//
// Later queues work that must run after the code that decided it and still
// within the same transition (a sub-machine's completion handled after the
// sub-machine's own bookkeeping): Take runs it, in order, before it returns
// the effects. Nothing here is concurrent: an Out belongs to one machine.
type Out struct {
	effects []Effect
	later   []func()
	last    []Effect
}

// Send adds a direct message to one peer.
func (o *Out) Send(to PeerID, protocol string, data []byte) {
	o.effects = append(o.effects, Send{To: to, Protocol: protocol, Data: data})
}

// Publish adds a publication on topic.
func (o *Out) Publish(topic string, data []byte) {
	o.effects = append(o.effects, Publish{Topic: topic, Data: data})
}

// SendLast adds a direct message that comes after every other effect of
// the transition: one nobody's next step waits for. On a busy uplink the
// transition's other messages (those the critical path waits for) then
// leave first and this one queues behind them. Messages added this way
// keep their order among themselves.
func (o *Out) SendLast(to PeerID, protocol string, data []byte) {
	o.last = append(o.last, Send{To: to, Protocol: protocol, Data: data})
}

// SetTimer arms (or re-arms) the named timer.
func (o *Out) SetTimer(name string, after time.Duration) {
	o.effects = append(o.effects, SetTimer{Name: name, After: after})
}

// CancelTimer stops the named timer if it is pending.
func (o *Out) CancelTimer(name string) { o.effects = append(o.effects, CancelTimer{Name: name}) }

// Notify adds a notification for the application.
func (o *Out) Notify(n Notify) { o.effects = append(o.effects, n) }

// Add appends effects decided elsewhere (a sub-machine's Step).
func (o *Out) Add(effects ...Effect) { o.effects = append(o.effects, effects...) }

// Later runs f at the end of the current transition (see Out).
func (o *Out) Later(f func()) { o.later = append(o.later, f) }

// Pending is how many effects are collected so far.
func (o *Out) Pending() int { return len(o.effects) + len(o.last) }

// Take runs the Later work (which may add effects and more Later work) and
// returns the effects collected, those of SendLast at the end, leaving o
// empty.
func (o *Out) Take() []Effect {
	for len(o.later) > 0 {
		f := o.later[0]
		o.later = o.later[1:]
		f()
	}
	o.later = nil
	e := append(o.effects, o.last...)
	o.effects, o.last = nil, nil
	return e
}

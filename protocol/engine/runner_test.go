package engine

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// pinger is a toy Machine: a "ping" from a peer is answered with a "pong"
// sent back and re-arms the "quiet" timer; "stop" cancels it; the timer's
// expiry publishes "quiet" and notifies the end. Anything else is refused.
type pinger struct {
	pings int
	ended bool
}

var errNotPing = errors.New("pinger: not a ping")

func (p *pinger) Receive(_ time.Time, m Message) ([]Effect, error) {
	switch {
	case p.ended:
		return nil, errors.New("pinger: ended")
	case string(m.Data) == "ping":
		p.pings++
		return []Effect{Send{To: m.From, Protocol: "/pong", Data: []byte("pong")}, SetTimer{Name: "quiet", After: time.Second}}, nil
	case string(m.Data) == "stop":
		return []Effect{CancelTimer{Name: "quiet"}}, nil
	}
	return nil, errNotPing
}

func (p *pinger) Fire(_ time.Time, name string) ([]Effect, error) {
	p.ended = true
	return []Effect{Publish{Topic: "t", Data: []byte(name)}, Notify{Event: EventFinal, Round: p.pings}}, nil
}

// The model's table: (state, input) -> (state', effects, error).
func TestStepTable(t *testing.T) {
	ping := Message{From: "alice", Topic: "t", Data: []byte("ping")}
	for _, r := range []struct {
		name    string
		from    pinger
		in      Input
		to      pinger
		effects []Effect
		err     error
	}{
		{"ping", pinger{}, ping, pinger{pings: 1},
			[]Effect{Send{To: "alice", Protocol: "/pong", Data: []byte("pong")}, SetTimer{Name: "quiet", After: time.Second}}, nil},
		{"stop", pinger{pings: 1}, Message{From: "alice", Data: []byte("stop")}, pinger{pings: 1}, []Effect{CancelTimer{Name: "quiet"}}, nil},
		{"refused", pinger{pings: 1}, Message{From: "alice", Data: []byte("hello")}, pinger{pings: 1}, nil, errNotPing},
		{"quiet", pinger{pings: 2}, TimerFired{Name: "quiet"}, pinger{pings: 2, ended: true},
			[]Effect{Publish{Topic: "t", Data: []byte("quiet")}, Notify{Event: EventFinal, Round: 2}}, nil},
	} {
		t.Run(r.name, func(t *testing.T) {
			m := r.from
			effs, err := Step(&m, time.Time{}, r.in)
			if !errors.Is(err, r.err) || m != r.to || !reflect.DeepEqual(effs, r.effects) {
				t.Fatalf("got (%+v, %v, %v), want (%+v, %v, %v)", m, effs, err, r.to, r.effects, r.err)
			}
		})
	}
}

type recordPoster struct{ sent, published []string }

func (p *recordPoster) Send(to PeerID, proto string, data []byte) {
	p.sent = append(p.sent, string(to)+" "+proto+" "+string(data))
}
func (p *recordPoster) Publish(topic string, data []byte) {
	p.published = append(p.published, topic+" "+string(data))
}

// The runner performs the effects: messages through the poster, a named
// timer re-armed by each ping (the old one does not fire), cancelled by
// stop, and the notification after the expiry.
func TestRunnerPerformsEffects(t *testing.T) {
	c := &handClock{}
	d := NewDriver(Config{Clock: c})
	defer d.Close()
	post := &recordPoster{}
	var notes []Notify
	var refused []error
	p := &pinger{}
	r := NewRunner(d, p, post, RunnerOptions{OnNotify: func(n Notify) { notes = append(notes, n) }, OnRefuse: func(err error) { refused = append(refused, err) }})
	ping := Message{From: "alice", Topic: "t", Data: []byte("ping")}
	r.Deliver(ping)
	c.advance(900*time.Millisecond, false)
	r.Deliver(ping) // re-arms: the first timer must not fire at 1 s
	c.advance(200*time.Millisecond, false)
	if p.ended {
		t.Fatal("the replaced timer fired")
	}
	r.Deliver(Message{From: "bob", Data: []byte("stop")})
	c.advance(time.Hour, false)
	if p.ended || len(notes) != 0 {
		t.Fatal("the cancelled timer fired")
	}
	r.Deliver(Message{From: "bob", Data: []byte("nonsense")})
	r.Inject(ping)
	c.advance(time.Second, false)
	want := []string{"alice /pong pong", "alice /pong pong", "alice /pong pong"}
	if !reflect.DeepEqual(post.sent, want) || !reflect.DeepEqual(post.published, []string{"t quiet"}) {
		t.Fatalf("sent %q published %q", post.sent, post.published)
	}
	if len(notes) != 1 || notes[0] != (Notify{Event: EventFinal, Round: 3}) {
		t.Fatalf("notes %+v", notes)
	}
	if len(refused) != 1 || !errors.Is(refused[0], errNotPing) || r.Refused() != 1 {
		t.Fatalf("refused %v (%d)", refused, r.Refused())
	}
}

package engine

import (
	"reflect"
	"testing"
)

// SendLast's messages come after every other effect of the transition,
// those decided by Later work included, in the order they were added; Take
// leaves the Out empty for the next transition.
func TestOutSendLastComesAfterTheRest(t *testing.T) {
	var o Out
	o.Send("a", "p", []byte("1"))
	o.SendLast("b", "p", []byte("last 1"))
	o.Publish("t", []byte("2"))
	o.Later(func() {
		o.SendLast("c", "p", []byte("last 2"))
		o.SetTimer("x", 1)
	})
	if got := o.Pending(); got != 3 {
		t.Fatalf("Pending %d, want 3 (SendLast's included)", got)
	}
	want := []Effect{
		Send{To: "a", Protocol: "p", Data: []byte("1")},
		Publish{Topic: "t", Data: []byte("2")},
		SetTimer{Name: "x", After: 1},
		Send{To: "b", Protocol: "p", Data: []byte("last 1")},
		Send{To: "c", Protocol: "p", Data: []byte("last 2")},
	}
	if got := o.Take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("effects\n got %v\nwant %v", got, want)
	}
	if got := o.Take(); len(got) != 0 || o.Pending() != 0 {
		t.Fatalf("a second Take: %v", got)
	}
}

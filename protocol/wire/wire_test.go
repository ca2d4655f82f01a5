package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	"google.golang.org/protobuf/proto"
)

func hdr() *Header { return &Header{Version: Version, Session: "s", Round: 2, Attempt: 1, Seq: 9} }

func bodies() []*Envelope {
	return []*Envelope{
		{Header: hdr(), Body: &Envelope_Announce{Announce: &Announce{Config: &SessionConfig{Learner: "stump", Thresholds: []float64{0.5}}}}},
		{Header: hdr(), Body: &Envelope_Join{Join: &Join{SchemaDigest: "ab", Addrs: []string{"/ip4/1.2.3.4/tcp/1"}}}},
		{Header: hdr(), Body: &Envelope_Select{Select: &Select{Selected: []string{"a"}, Roster: []string{"a", "b"}, RosterVersion: 1}}},
		{Header: hdr(), Body: &Envelope_Share{Share: &Share{Values: []float64{-1, 2}, Labels: []uint32{1}}}},
		{Header: hdr(), Body: &Envelope_Refuse{Refuse: &Refuse{Reason: "budget"}}},
		{Header: hdr(), Body: &Envelope_Learner{Learner: &Learner{Model: []byte("{}")}}},
		{Header: hdr(), Body: &Envelope_Alpha{Alpha: &Alpha{Alpha: 0.5, Accepted: true}}},
		{Header: hdr(), Body: &Envelope_SumStart{SumStart: &SumStart{Purpose: "err", Committee: []string{"a"}}}},
		{Header: hdr(), Body: &Envelope_SumResult{SumResult: &SumResult{Total: []float64{1}}}},
		{Header: hdr(), Body: &Envelope_Final{Final: &Final{Model: []byte("{}")}}},
		{Header: hdr(), Body: &Envelope_Sum{Sum: &Sum{Kind: Sum_SHAMIR_SHARE, Values: []uint64{1, 2}, X: 3}}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, e := range bodies() {
		b, err := Marshal(e, MaxControlBytes)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Unmarshal(b, MaxControlBytes)
		if err != nil || !proto.Equal(got, e) {
			t.Fatalf("round trip of %T: %v", e.Body, err)
		}
	}
}

func TestUnmarshalErrors(t *testing.T) {
	good, _ := Marshal(bodies()[0], MaxControlBytes)
	mk := func(e *Envelope) []byte { b, _ := proto.Marshal(e); return b }
	cases := map[string]struct {
		data []byte
		want error
	}{
		"oversize":  {good, ErrTooLarge},
		"garbage":   {[]byte{0xff, 0xff, 0xff}, ErrMalformed},
		"no header": {mk(&Envelope{Body: &Envelope_Refuse{Refuse: &Refuse{}}}), ErrMalformed},
		"version":   {mk(&Envelope{Header: &Header{Version: 2, Session: "s"}, Body: &Envelope_Refuse{Refuse: &Refuse{}}}), ErrVersion},
		"session":   {mk(&Envelope{Header: &Header{Version: Version}, Body: &Envelope_Refuse{Refuse: &Refuse{}}}), ErrMalformed},
		"no body":   {mk(&Envelope{Header: hdr()}), ErrNoBody},
	}
	for name, c := range cases {
		max := MaxControlBytes
		if name == "oversize" {
			max = len(good) - 1
		}
		if _, err := Unmarshal(c.data, max); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", name, err, c.want)
		}
	}
	big := &Envelope{Header: hdr(), Body: &Envelope_Share{Share: &Share{Values: make([]float64, 1000)}}}
	if _, err := Marshal(big, 100); !errors.Is(err, ErrTooLarge) {
		t.Errorf("marshal over the cap: %v", err)
	}
}

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	for _, p := range [][]byte{[]byte("one"), {}, bytes.Repeat([]byte{7}, 300)} {
		if err := WriteFrame(&buf, p, 1000); err != nil {
			t.Fatal(err)
		}
	}
	r := bufio.NewReader(bytes.NewReader(buf.Bytes()))
	for _, want := range []int{3, 0, 300} {
		p, err := ReadFrame(r, 1000)
		if err != nil || len(p) != want {
			t.Fatalf("frame of %d: %v", len(p), err)
		}
	}
	if _, err := ReadFrame(r, 1000); err != io.EOF {
		t.Fatalf("clean end: %v", err)
	}
	if err := WriteFrame(&buf, make([]byte, 11), 10); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("write over the cap: %v", err)
	}
	buf.Reset()
	WriteFrame(&buf, make([]byte, 50), 100)
	if _, err := ReadFrame(bufio.NewReader(bytes.NewReader(buf.Bytes())), 10); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("read over the cap: %v", err)
	}
	if _, err := ReadFrame(bufio.NewReader(bytes.NewReader(buf.Bytes()[:20])), 100); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated frame: %v", err)
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, e := range bodies() {
		b, _ := Marshal(e, MaxControlBytes)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Unmarshal(b, MaxControlBytes)
		if err != nil {
			return
		}
		again, err := Marshal(e, MaxControlBytes)
		if err != nil {
			t.Fatal(err)
		}
		e2, err := Unmarshal(again, MaxControlBytes)
		if err != nil || !proto.Equal(e, e2) {
			t.Fatalf("re-marshalled envelope differs: %v", err)
		}
	})
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{3, 'a', 'b', 'c'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReader(bytes.NewReader(b))
		for {
			p, err := ReadFrame(r, 64)
			if err != nil {
				return
			}
			if len(p) > 64 {
				t.Fatalf("frame of %d bytes over the cap", len(p))
			}
		}
	})
}

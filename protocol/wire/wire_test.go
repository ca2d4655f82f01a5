package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

func hdr() *Header { return &Header{Version: Version, Session: "s", Round: 2, Attempt: 1, Seq: 9} }

// fill sets every field of m (recursively, lists with two elements) to a
// value that is not the default, so that a round trip exercises every field's
// encoding. Members of real oneofs are left alone: the caller picks one.
func fill(m protoreflect.Message) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			continue
		}
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for k := 0; k < 2; k++ {
				if fd.Kind() == protoreflect.MessageKind {
					e := l.NewElement()
					fill(e.Message())
					l.Append(e)
				} else {
					l.Append(scalar(fd, k))
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			fill(m.Mutable(fd).Message())
		default:
			m.Set(fd, scalar(fd, 0))
		}
	}
}

// scalar is the k-th non-default test value of a scalar field: extremes of
// each type, so that varints take their longest forms.
func scalar(fd protoreflect.FieldDescriptor, k int) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(vals.Len() - 1 - k%(vals.Len()-1)).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(math.MinInt32 + int32(k))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(math.MaxUint32 - uint32(k))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(math.MinInt64 + int64(k))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(math.MaxUint64 - uint64(k))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(-math.MaxFloat32 / float32(k+1))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64([]float64{-math.MaxFloat64, math.SmallestNonzeroFloat64}[k%2])
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(fmt.Sprintf("%s-é-%d", fd.Name(), k))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{0, 0xff, byte(k)})
	}
	panic(fmt.Sprintf("test filler: unhandled kind %v of %s", fd.Kind(), fd.FullName()))
}

// bodyFields lists the members of Envelope's body oneof.
func bodyFields() []protoreflect.FieldDescriptor {
	od := (&Envelope{}).ProtoReflect().Descriptor().Oneofs().ByName("body")
	out := make([]protoreflect.FieldDescriptor, od.Fields().Len())
	for i := range out {
		out[i] = od.Fields().Get(i)
	}
	return out
}

// fullEnvelope is an envelope with every header field and every field of the
// body fd set.
func fullEnvelope(fd protoreflect.FieldDescriptor) *Envelope {
	e := &Envelope{}
	fill(e.ProtoReflect())
	e.Header.Version = Version
	fill(e.ProtoReflect().Mutable(fd).Message())
	return e
}

// bodies are small hand-written envelopes, one per body, for seed corpora.
func bodies() []*Envelope {
	return []*Envelope{
		{Header: hdr(), Body: &Envelope_Announce{Announce: &Announce{Config: &SessionConfig{Learner: "stump", Thresholds: []float64{0.5}}}}},
		{Header: hdr(), Body: &Envelope_Join{Join: &Join{SchemaDigest: "ab", Addrs: []string{"/ip4/1.2.3.4/tcp/1"}}}},
		{Header: hdr(), Body: &Envelope_Select{Select: &Select{Selected: []string{"a"}, RosterVersion: 1, RosterSize: 2, RosterDigest: []byte{1}, DeadlineUnixMs: 5}}},
		{Header: hdr(), Body: &Envelope_Roster{Roster: &Roster{Version: 1, Chunks: 1, Ids: []string{"a"}, Addrs: []string{""}, Nonces: [][]byte{{1}}}}},
		{Header: hdr(), Body: &Envelope_RosterRequest{RosterRequest: &RosterRequest{Version: 1}}},
		{Header: hdr(), Body: &Envelope_RosterAck{RosterAck: &RosterAck{Version: 1}}},
		{Header: hdr(), Body: &Envelope_RosterHead{RosterHead: &RosterHead{Version: 1, Size: 3, ChunkDigests: [][]byte{make([]byte, 32)}, Fanout: 32}}},
		{Header: hdr(), Body: &Envelope_LiveCheck{LiveCheck: &LiveCheck{Nonce: make([]byte, 16), RosterVersion: 2}}},
		{Header: hdr(), Body: &Envelope_LiveEcho{LiveEcho: &LiveEcho{Nonce: make([]byte, 16)}}},
		{Header: hdr(), Body: &Envelope_Abort{Abort: &Abort{Reason: "x"}}},
		{Header: hdr(), Body: &Envelope_Share{Share: &Share{Values: []float64{-1, 2}, Labels: []uint32{1}}}},
		{Header: hdr(), Body: &Envelope_Refuse{Refuse: &Refuse{Reason: "budget"}}},
		{Header: hdr(), Body: &Envelope_Learner{Learner: &Learner{Base: &BaseLearner{Kind: &BaseLearner_Stump{Stump: &Stump{Feature: 1, Threshold: 0.5, Right: 1}}}}}},
		{Header: hdr(), Body: &Envelope_Alpha{Alpha: &Alpha{Alpha: 0.5, Accepted: true}}},
		{Header: hdr(), Body: &Envelope_SumStart{SumStart: &SumStart{Purpose: "err", Committee: []string{"a"}}}},
		{Header: hdr(), Body: &Envelope_SumResult{SumResult: &SumResult{Total: []float64{1}}}},
		{Header: hdr(), Body: &Envelope_Final{Final: &Final{Outcome: &Outcome{Kind: Outcome_COMPLETE, Rounds: 1, Planned: 1}, Model: &Final_Wc{Wc: &WCModel{Config: &BoostConfig{Learner: "ncc"}, Features: []string{"x"}, ClassNames: []string{"a", "b"}, Classes: 2, Rounds: []*WCRound{{Alpha: 1, Base: &BaseLearner{Kind: &BaseLearner_Ncc{Ncc: &Matrix{Rows: 2, Cols: 1, Values: []float64{-1, 1}}}}}}}}}}},
		{Header: hdr(), Body: &Envelope_Sum{Sum: &Sum{Kind: Sum_SHAMIR_SHARE, Values: []uint64{1, 2}, X: 3}}},
		{Header: hdr(), Body: &Envelope_FedConfig{FedConfig: &FedConfig{Session: "s", Boost: &DPBoostConfig{Method: "dpboost", Trees: 2}, Schema: &Schema{Classes: []string{"a", "b"}, Columns: []*SchemaColumn{{Name: "x", Kind: "numeric", Max: 1}}}, Sum: &SumParams{Method: "shamir", TimeoutNs: 1}, Roster: []string{"o1"}, Beacon: []byte{1}}}},
		{Header: hdr(), Body: &Envelope_FedTree{FedTree: &FedTree{Levels: 1, Feature: []uint32{2}, Bin: []uint32{3}, Leaf: []float64{0.5, -0.5}, Complete: true}}},
	}
}

// TestRoundTripEveryBody marshals and unmarshals an envelope of every body
// kind in the proto, with every field set, and checks Wrap knows each kind.
func TestRoundTripEveryBody(t *testing.T) {
	fds := bodyFields()
	if len(fds) != len(bodies()) {
		t.Errorf("the proto has %d bodies, the seed list bodies() %d: update it", len(fds), len(bodies()))
	}
	for _, fd := range fds {
		t.Run(string(fd.Name()), func(t *testing.T) {
			e := fullEnvelope(fd)
			b, err := Marshal(e, MaxControlBytes)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Unmarshal(b, MaxControlBytes)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, e) {
				t.Fatalf("round trip changed the envelope:\n got %v\nwant %v", got, e)
			}
			if which := got.ProtoReflect().WhichOneof(fd.ContainingOneof()); which != fd {
				t.Fatalf("decoded body is %v, want %v", which, fd.Name())
			}
			body := e.ProtoReflect().Get(fd).Message().Interface()
			w, err := Wrap(e.Header, body)
			if err != nil {
				t.Fatalf("Wrap(%T): %v", body, err)
			}
			if !proto.Equal(w, e) {
				t.Fatalf("Wrap(%T) built %v", body, w)
			}
		})
	}
	if _, err := Wrap(hdr(), &Header{}); err == nil {
		t.Error("Wrap accepted a Header as a body")
	}
}

func TestUnmarshalErrors(t *testing.T) {
	good, err := Marshal(bodies()[0], MaxControlBytes)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(e *Envelope) []byte {
		b, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	refuse := &Envelope_Refuse{Refuse: &Refuse{}}
	cases := []struct {
		name string
		data []byte
		max  int
		want error
	}{
		{"oversize", good, len(good) - 1, ErrTooLarge},
		{"at the cap", good, len(good), nil},
		{"empty", nil, MaxControlBytes, ErrMalformed}, // parses, but has no header
		{"garbage", []byte{0xff, 0xff, 0xff}, MaxControlBytes, ErrMalformed},
		{"truncated", good[:len(good)-1], MaxControlBytes, ErrMalformed},
		{"wrong wire type", protowire.AppendTag(nil, 1, protowire.Fixed32Type), MaxControlBytes, ErrMalformed},
		{"invalid utf-8", badUTF8Session(), MaxControlBytes, ErrMalformed},
		{"missing header", mk(&Envelope{Body: refuse}), MaxControlBytes, ErrMalformed},
		{"next version", mk(&Envelope{Header: &Header{Version: Version + 1, Session: "s"}, Body: refuse}), MaxControlBytes, ErrVersion},
		{"version 1", mk(&Envelope{Header: &Header{Version: 1, Session: "s"}, Body: refuse}), MaxControlBytes, ErrVersion},
		{"version 0", mk(&Envelope{Header: &Header{Session: "s"}, Body: refuse}), MaxControlBytes, ErrVersion},
		{"empty session", mk(&Envelope{Header: &Header{Version: Version}, Body: refuse}), MaxControlBytes, ErrMalformed},
		{"missing body", mk(&Envelope{Header: hdr()}), MaxControlBytes, ErrNoBody},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := Unmarshal(c.data, c.max)
			if c.want == nil {
				if err != nil || e == nil {
					t.Fatalf("got %v, want success", err)
				}
				return
			}
			if !errors.Is(err, c.want) || e != nil {
				t.Fatalf("got (%v, %v), want error %v", e, err, c.want)
			}
		})
	}
	big := &Envelope{Header: hdr(), Body: &Envelope_Share{Share: &Share{Values: make([]float64, 1000)}}}
	if _, err := Marshal(big, 100); !errors.Is(err, ErrTooLarge) {
		t.Errorf("marshal over the cap: %v", err)
	}
}

// badUTF8Session encodes by hand (proto.Marshal refuses it) an envelope
// whose session string is not UTF-8.
func badUTF8Session() []byte {
	h := protowire.AppendTag(nil, 1, protowire.VarintType)
	h = protowire.AppendVarint(h, Version)
	h = protowire.AppendTag(h, 2, protowire.BytesType)
	h = protowire.AppendString(h, "\xff")
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, h)
	b = protowire.AppendTag(b, 14, protowire.BytesType) // refuse
	return protowire.AppendBytes(b, nil)
}

// frame is the expected encoding: uvarint length, payload.
func frame(p []byte) []byte { return append(binary.AppendUvarint(nil, uint64(len(p))), p...) }

func TestFrameRoundTrip(t *testing.T) {
	const max = 1000
	payloads := [][]byte{[]byte("one"), {}, bytes.Repeat([]byte{7}, 127), bytes.Repeat([]byte{8}, 128), bytes.Repeat([]byte{9}, max)}
	var buf bytes.Buffer
	var want []byte
	for _, p := range payloads {
		if err := WriteFrame(&buf, p, max); err != nil {
			t.Fatal(err)
		}
		want = append(want, frame(p)...)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatal("WriteFrame's bytes are not uvarint length + payload")
	}
	r := bufio.NewReader(&buf)
	for _, p := range payloads {
		got, err := ReadFrame(r, max)
		if err != nil || !bytes.Equal(got, p) {
			t.Fatalf("frame of %d bytes read back as %d bytes, err %v", len(p), len(got), err)
		}
	}
	if _, err := ReadFrame(r, max); err != io.EOF {
		t.Fatalf("clean end: %v, want io.EOF itself", err)
	}
}

func TestFrameErrors(t *testing.T) {
	if err := WriteFrame(io.Discard, make([]byte, 11), 10); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("write over the cap: %v", err)
	}
	boom := errors.New("boom")
	if err := WriteFrame(failWriter{boom}, []byte("x"), 10); !errors.Is(err, boom) {
		t.Errorf("writer error lost: %v", err)
	}
	f := frame(make([]byte, 50))
	cases := []struct {
		name string
		data []byte
		max  int
		want error
	}{
		{"over the cap", f, 49, ErrFrameTooLarge},
		{"at the cap", f, 50, nil},
		{"truncated payload", f[:20], 100, io.ErrUnexpectedEOF},
		{"only the length", f[:1], 100, io.ErrUnexpectedEOF},
		{"truncated length", []byte{0x80, 0x80}, 100, io.ErrUnexpectedEOF},
		{"overlong length", bytes.Repeat([]byte{0xff}, 11), 100, ErrBadVarint},
		{"length overflows 64 bits", append(bytes.Repeat([]byte{0xff}, 9), 0x02), 100, ErrBadVarint},
		{"huge claimed length", binary.AppendUvarint(nil, math.MaxUint64), 100, ErrFrameTooLarge},
		{"clean end", nil, 100, io.EOF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := ReadFrame(bufio.NewReader(bytes.NewReader(c.data)), c.max)
			if c.want == nil {
				if err != nil || len(p) != 50 {
					t.Fatalf("got %d bytes, %v", len(p), err)
				}
				return
			}
			if !errors.Is(err, c.want) || p != nil {
				t.Fatalf("got (%d bytes, %v), want %v", len(p), err, c.want)
			}
		})
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// allocated is the process's cumulative heap allocation in bytes.
func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// allocSlack covers ReadFrame's own small allocations (error values) and
// whatever the runtime allocates meanwhile; a frame buffer sized by a
// claimed length beyond the cap would exceed it by far.
const allocSlack = 64 << 10

// TestReadFrameAllocatesNoMoreThanTheCap: a length prefix claiming 2^62
// bytes is refused before any buffer is allocated, and a claim within the
// cap allocates at most the claim, even when the stream then ends.
func TestReadFrameAllocatesNoMoreThanTheCap(t *testing.T) {
	for _, c := range []struct {
		claim uint64
		max   int
		bound uint64
	}{
		{1 << 62, 1 << 20, allocSlack},
		{1 << 30, 1 << 20, allocSlack},
		{1 << 20, 1 << 20, 1<<20 + allocSlack},
	} {
		r := bufio.NewReader(bytes.NewReader(binary.AppendUvarint(nil, c.claim)))
		before := allocated()
		_, err := ReadFrame(r, c.max)
		if grew := allocated() - before; grew > c.bound {
			t.Errorf("claim %d, cap %d: allocated %d bytes, bound %d", c.claim, c.max, grew, c.bound)
		}
		if err == nil {
			t.Errorf("claim %d with no payload: no error", c.claim)
		}
	}
}

// TestReadFrameGrowsAsBytesArrive: a claim is not an allocation. A frame
// announcing 1 MiB whose sender stops after k bytes costs at most
// 2k + firstChunk bytes (allocated and reserved), and a complete frame
// reserves exactly its length.
func TestReadFrameGrowsAsBytesArrive(t *testing.T) {
	const claim = 1 << 20
	for _, sent := range []int{0, 10, 5000, 100 << 10} {
		data := append(binary.AppendUvarint(nil, claim), make([]byte, sent)...)
		r := bufio.NewReader(bytes.NewReader(data))
		reserved := 0
		before := allocated()
		_, err := ReadFrameFunc(r, MaxControlBytes, func(n int) error { reserved += n; return nil })
		grew := allocated() - before
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("sent %d of %d: %v, want a truncated frame", sent, claim, err)
		}
		bound := 2*sent + firstChunk
		if reserved > bound {
			t.Errorf("sent %d of a claimed %d: reserved %d bytes, bound 2*sent+%d = %d", sent, claim, reserved, firstChunk, bound)
		}
		// Every buffer allocated on the way (at most doubling) sums to
		// under twice the last one.
		if grew > uint64(2*bound)+allocSlack {
			t.Errorf("sent %d of a claimed %d: allocated %d bytes, bound %d", sent, claim, grew, 2*bound+allocSlack)
		}
	}
	for _, size := range []int{0, 1, firstChunk, firstChunk + 1, 300 << 10} {
		p := bytes.Repeat([]byte{7}, size)
		reserved := 0
		got, err := ReadFrameFunc(bufio.NewReader(bytes.NewReader(frame(p))), MaxControlBytes,
			func(n int) error { reserved += n; return nil })
		if err != nil || !bytes.Equal(got, p) || got == nil {
			t.Fatalf("frame of %d bytes: got %d bytes, %v", size, len(got), err)
		}
		if reserved != cap(got) || cap(got) != size {
			t.Errorf("frame of %d bytes: reserved %d, cap %d", size, reserved, cap(got))
		}
	}
	// A refused reservation ends the read with its error.
	no := errors.New("over budget")
	_, err := ReadFrameFunc(bufio.NewReader(bytes.NewReader(frame(make([]byte, 64<<10)))), MaxControlBytes,
		func(n int) error {
			if n > firstChunk {
				return no
			}
			return nil
		})
	if !errors.Is(err, no) {
		t.Fatalf("refused reservation: %v", err)
	}
}

// TestFreeTextIsBounded: a peer's reason or digest of any length decodes
// to at most MaxTextBytes, valid UTF-8 when the input was, and short text
// is untouched.
func TestFreeTextIsBounded(t *testing.T) {
	h := &Header{Version: Version, Session: "s"}
	long := strings.Repeat("é", MaxControlBytes/4) // 2-byte runes: a cut must not split one
	for _, body := range []proto.Message{&Refuse{Reason: long}, &Abort{Reason: long}, &Join{SchemaDigest: long},
		&Abort{Outcome: &Outcome{Kind: Outcome_FAILED, Reason: long}}, &Final{Outcome: &Outcome{Kind: Outcome_PARTIAL, Reason: long}}} {
		env, err := Wrap(h, body)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Marshal(env, MaxControlBytes)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Unmarshal(b, MaxControlBytes)
		if err != nil {
			t.Fatal(err)
		}
		text := got.GetRefuse().GetReason() + got.GetAbort().GetReason() + got.GetJoin().GetSchemaDigest() +
			got.GetAbort().GetOutcome().GetReason() + got.GetFinal().GetOutcome().GetReason()
		if len(text) > MaxTextBytes || !utf8.ValidString(text) || !strings.Contains(text, "bytes cut") {
			t.Errorf("%T: decoded %d bytes (valid UTF-8 %v): %.40q...", body, len(text), utf8.ValidString(text), text)
		}
	}
	if got := Truncate("short", MaxTextBytes); got != "short" {
		t.Errorf("short text changed: %q", got)
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, e := range bodies() {
		b, err := Marshal(e, MaxControlBytes)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, fd := range bodyFields() {
		b, err := Marshal(fullEnvelope(fd), MaxControlBytes)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x80}) // header with a truncated length
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Unmarshal(b, MaxControlBytes)
		if err != nil {
			if e != nil {
				t.Fatal("error with a non-nil envelope")
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrVersion) && !errors.Is(err, ErrNoBody) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error outside the sentinel set: %v", err)
			}
			return
		}
		if e.GetHeader().GetVersion() != Version || e.GetHeader().GetSession() == "" || e.GetBody() == nil {
			t.Fatalf("accepted an envelope that breaks the shape rules: %v", e)
		}
		// Re-encoding may normalize (packed lists, minimal varints) but must
		// not grow past twice the input, and must decode to the same value.
		again, err := Marshal(e, 2*MaxControlBytes)
		if err != nil {
			t.Fatal(err)
		}
		e2, err := Unmarshal(again, 2*MaxControlBytes)
		if err != nil {
			t.Fatalf("re-marshalled envelope does not decode: %v", err)
		}
		if !proto.Equal(e, e2) {
			t.Fatalf("re-marshalled envelope differs:\n%v\n%v", e, e2)
		}
	})
}

// FuzzReadFrame reads frames until an error and checks each result against
// an independent decoding of the input (binary.Uvarint), each error against
// the reason it must have, and each call's allocation against the cap.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{3, 'a', 'b', 'c', 0, 1, 'z'}, uint16(64))
	f.Add(frame(bytes.Repeat([]byte{1}, 300)), uint16(300))
	f.Add(frame(bytes.Repeat([]byte{1}, 300)), uint16(299))
	f.Add(binary.AppendUvarint(nil, 1<<40), uint16(64))
	f.Add(bytes.Repeat([]byte{0xff}, 11), uint16(64))
	f.Add(bytes.Repeat([]byte{0x80}, 10), uint16(64))
	f.Add([]byte{0x80, 0x00, 'x'}, uint16(1)) // non-minimal zero length
	f.Add([]byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, b []byte, capHint uint16) {
		max := int(capHint)
		r := bufio.NewReader(bytes.NewReader(b))
		rest := b
		for {
			claim, k := binary.Uvarint(rest)
			bound := uint64(allocSlack)
			if k > 0 && claim <= uint64(max) {
				bound += claim
			}
			before := allocated()
			p, err := ReadFrame(r, max)
			if grew := allocated() - before; grew > bound {
				t.Fatalf("allocated %d bytes for a claim of %d under cap %d", grew, claim, max)
			}
			var want error
			switch {
			case len(rest) == 0:
				want = io.EOF
			case k == 0 && len(rest) >= binary.MaxVarintLen64: // ten continuation bytes
				want = ErrBadVarint
			case k == 0:
				want = io.ErrUnexpectedEOF
			case k < 0:
				want = ErrBadVarint
			case claim > uint64(max):
				want = ErrFrameTooLarge
			case uint64(len(rest)-k) < claim:
				want = io.ErrUnexpectedEOF
			}
			if want != nil {
				if !errors.Is(err, want) || p != nil {
					t.Fatalf("got (%d bytes, %v), want %v", len(p), err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("valid frame of %d bytes refused: %v", claim, err)
			}
			if !bytes.Equal(p, rest[k:k+int(claim)]) {
				t.Fatal("payload differs from the input bytes")
			}
			rest = rest[k+int(claim):]
		}
	})
}

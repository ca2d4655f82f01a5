package wire

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
)

// Version is the protocol version carried in every Header. Version 2:
// protocol IDs and topics per system (System), FedConfig typed instead of
// a JSON blob, PFDS messages as PfdsMessage.
const Version = 2

// System names the topics and stream protocols of one protocol family, so
// that one host can serve roles of several families at once: a transport
// routes each message by its topic or protocol ID to the family's handler
// (protocol.Mux), and no family sees another's traffic.
type System struct {
	Name    string // "wc" | "fed" | "pfds"
	Control string // topic: data user (or announcer) -> owners
	Shares  string // topic: owners -> data user (W&C only)
	Session string // protocol: owner <-> user direct messages (W&C only)
	Ring    string // protocol: masked-ring secure sums
	Shamir  string // protocol: Shamir secure sums
}

// Topics are the system's gossipsub topics (non-empty ones).
func (s System) Topics() []string { return nonEmpty(s.Control, s.Shares) }

// Protocols are the system's direct-stream protocol IDs (non-empty ones).
func (s System) Protocols() []string { return nonEmpty(s.Session, s.Ring, s.Shamir) }

// SumProtocol is the stream protocol of a secure sum by method ("ring" or
// "shamir").
func (s System) SumProtocol(method string) string {
	if method == "ring" {
		return s.Ring
	}
	return s.Shamir
}

func nonEmpty(a ...string) []string {
	var out []string
	for _, x := range a {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// WC is Wang & Chang's privacy-preserving boosting (protocol/session).
func WC() System {
	return System{Name: "wc", Control: TopicControl, Shares: TopicShares, Session: ProtoSession, Ring: ProtoRing, Shamir: ProtoShamir}
}

// Fed is federated DPBoost (protocol/fedboost): Shamir sums only.
func Fed() System { return System{Name: "fed", Control: TopicFedControl, Shamir: ProtoFedShamir} }

// PFDS is private federated data sharing (protocol/pfds): one topic.
func PFDS() System { return System{Name: "pfds", Control: TopicPFDS} }

// Systems lists WC, Fed and PFDS.
func Systems() []System { return []System{WC(), Fed(), PFDS()} }

// Versioned protocol IDs for direct streams and topic names for gossipsub,
// per system (/ppboost/<system>/...).
const (
	ProtoSession     = "/ppboost/wc/session/2.0.0"           // W&C owner <-> user: Join, Refuse
	ProtoRing        = "/ppboost/wc/securesum/ring/2.0.0"    // W&C masked-ring sum traffic
	ProtoShamir      = "/ppboost/wc/securesum/shamir/2.0.0"  // W&C Shamir sum traffic
	TopicControl     = "/ppboost/wc/control/2.0.0"           // W&C user -> owners
	TopicShares      = "/ppboost/wc/shares/2.0.0"            // W&C selected owners -> user
	TopicFedControl  = "/ppboost/fed/control/2.0.0"          // federated DPBoost user -> owners
	ProtoFedShamir   = "/ppboost/fed/securesum/shamir/2.0.0" // federated DPBoost Shamir sum traffic
	TopicPFDS        = "/ppboost/pfds/2.0.0"                 // PFDS: every PfdsMessage
	MaxControlBytes  = 1 << 20                               // cap on a control message
	MaxShareBytes    = 1 << 20                               // cap on a share message
	MaxSumFrameBytes = 64 << 10                              // cap on a secure-sum frame
	// MaxTextBytes caps every free-text field a peer can fill (Refuse and
	// Abort reasons, a Join's schema digest): Unmarshal truncates longer
	// ones, so a 1 MiB reason costs its reader one decode, not a 1 MiB
	// string kept in a map and written to a log.
	MaxTextBytes = 512
	// MaxSchemaBytes caps the public schema an Announce carries (a schema
	// over it is announced by digest only).
	MaxSchemaBytes = 256 << 10
)

// Decoding errors.
var (
	ErrMalformed = errors.New("wire: malformed message")
	ErrVersion   = errors.New("wire: unsupported protocol version")
	ErrNoBody    = errors.New("wire: envelope without body")
	ErrTooLarge  = errors.New("wire: message exceeds size cap")
)

// Marshal encodes an envelope, refusing results larger than max bytes.
func Marshal(e *Envelope, max int) ([]byte, error) {
	b, err := proto.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("wire: marshal: %w", err)
	}
	if len(b) > max {
		return nil, fmt.Errorf("%w: %d > %d bytes", ErrTooLarge, len(b), max)
	}
	return b, nil
}

// Unmarshal decodes and shape-checks an envelope of at most max bytes: it
// must parse, carry a header with this Version and a non-empty session, and
// have a body.
func Unmarshal(b []byte, max int) (*Envelope, error) {
	if len(b) > max {
		return nil, fmt.Errorf("%w: %d > %d bytes", ErrTooLarge, len(b), max)
	}
	var e Envelope
	if err := proto.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	h := e.GetHeader()
	if h == nil {
		return nil, fmt.Errorf("%w: no header", ErrMalformed)
	}
	if h.GetVersion() != Version {
		return nil, fmt.Errorf("%w: %d", ErrVersion, h.GetVersion())
	}
	if h.GetSession() == "" {
		return nil, fmt.Errorf("%w: empty session", ErrMalformed)
	}
	if e.GetBody() == nil {
		return nil, ErrNoBody
	}
	clampText(&e)
	return &e, nil
}

// clampText truncates the free-text fields of e to MaxTextBytes.
func clampText(e *Envelope) {
	switch b := e.GetBody().(type) {
	case *Envelope_Refuse:
		if b.Refuse != nil {
			b.Refuse.Reason = Truncate(b.Refuse.Reason, MaxTextBytes)
		}
	case *Envelope_Abort:
		if b.Abort != nil {
			b.Abort.Reason = Truncate(b.Abort.Reason, MaxTextBytes)
			if o := b.Abort.Outcome; o != nil {
				o.Reason = Truncate(o.Reason, MaxTextBytes)
			}
		}
	case *Envelope_Final:
		if o := b.Final.GetOutcome(); o != nil {
			o.Reason = Truncate(o.Reason, MaxTextBytes)
		}
	case *Envelope_Join:
		if b.Join != nil {
			b.Join.SchemaDigest = Truncate(b.Join.SchemaDigest, MaxTextBytes)
		}
	}
}

// Truncate returns s if it has at most n bytes, and otherwise a copy of
// its first bytes (cut at a rune boundary) with a note of how much was
// cut, in at most n bytes. The copy does not keep s's memory alive.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	note := fmt.Sprintf("...(%d bytes cut)", len(s))
	keep := max(0, n-len(note))
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return strings.Clone(s[:keep]) + note
}

// Wrap puts one message body into an envelope with header h.
func Wrap(h *Header, body proto.Message) (*Envelope, error) {
	e := &Envelope{Header: h}
	switch b := body.(type) {
	case *Announce:
		e.Body = &Envelope_Announce{Announce: b}
	case *Join:
		e.Body = &Envelope_Join{Join: b}
	case *Select:
		e.Body = &Envelope_Select{Select: b}
	case *Share:
		e.Body = &Envelope_Share{Share: b}
	case *Refuse:
		e.Body = &Envelope_Refuse{Refuse: b}
	case *Learner:
		e.Body = &Envelope_Learner{Learner: b}
	case *Alpha:
		e.Body = &Envelope_Alpha{Alpha: b}
	case *SumStart:
		e.Body = &Envelope_SumStart{SumStart: b}
	case *SumResult:
		e.Body = &Envelope_SumResult{SumResult: b}
	case *Final:
		e.Body = &Envelope_Final{Final: b}
	case *Sum:
		e.Body = &Envelope_Sum{Sum: b}
	case *Abort:
		e.Body = &Envelope_Abort{Abort: b}
	case *Roster:
		e.Body = &Envelope_Roster{Roster: b}
	case *RosterRequest:
		e.Body = &Envelope_RosterRequest{RosterRequest: b}
	case *FedConfig:
		e.Body = &Envelope_FedConfig{FedConfig: b}
	case *FedTree:
		e.Body = &Envelope_FedTree{FedTree: b}
	case *LiveCheck:
		e.Body = &Envelope_LiveCheck{LiveCheck: b}
	case *LiveEcho:
		e.Body = &Envelope_LiveEcho{LiveEcho: b}
	case *RosterAck:
		e.Body = &Envelope_RosterAck{RosterAck: b}
	case *RosterHead:
		e.Body = &Envelope_RosterHead{RosterHead: b}
	default:
		return nil, fmt.Errorf("wire: %T is not an envelope body", body)
	}
	return e, nil
}

// DirectProtocols are every system's direct-stream protocol IDs: what a
// host serves.
func DirectProtocols() []string {
	var out []string
	for _, s := range Systems() {
		out = append(out, s.Protocols()...)
	}
	return out
}

// FrameCap is the frame size cap of a direct protocol: MaxControlBytes for
// a session protocol, MaxSumFrameBytes for a secure-sum one; false for an
// unknown protocol. A system without a session protocol (federated
// DPBoost) sends its direct control messages on its Shamir protocol (the
// configuration down its tree: protocol/fedboost/cfgtree.go, 161 KB at
// 1,000 owners), so that protocol has the control cap; its receivers hold
// every other body to MaxSumFrameBytes.
func FrameCap(protoID string) (int, bool) {
	for _, s := range Systems() {
		switch protoID {
		case "":
		case s.Session:
			return MaxControlBytes, true
		case s.Shamir:
			if s.Session == "" {
				return MaxControlBytes, true
			}
			return MaxSumFrameBytes, true
		case s.Ring:
			return MaxSumFrameBytes, true
		}
	}
	return 0, false
}

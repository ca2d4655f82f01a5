package fedboost

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
	"time"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/lifecycle"
	"github.com/ppboost/ppboost/protocol/wire"
)

// The configuration tree (issue 31). A FedConfig carries the roster and its
// addresses (about 200-300 bytes a member); flooded on the control topic it
// went from the data user to each of its n owners, n² of it on the user's
// uplink (1,000 owners: about 150 MB, a first tree of 142 one-way delays on
// the simulated internet). Instead the user publishes a RosterHead on the
// control topic naming the SHA-256 of the FedConfig envelope's bytes
// (chunk_digests[0]; fan-out protocol.TreeFanout) and sends those bytes
// direct, on the sum stream, to the roster's first k members; the member at
// index i forwards them unchanged to members (i+1)·k … (i+1)·k+k−1, once per
// digest (protocol.TreeChildren). An owner takes a FedConfig from another
// owner only when the user's head names its bytes; a forwarded one that
// comes before its session's head is held (at most maxHeldConfigs, the
// latest), and
// anything else is refused and counted under "not from the session's data
// user". The user's own copies, on the topic or direct, are taken as before.
//
// A forwarder that forwards nothing (crashed, or deviating) leaves its
// children without the configuration: a child that holds the head but no
// configuration configGrace later, or that receives a sum's SumStart or a
// tree of a session whose configuration it lacks (the sum needs it now),
// asks the user for it (a RosterRequest on the sum stream), and the user
// sends it direct (User.onConfigRequest); the held SumStart then applies.
// An owner that takes the configuration tells the user so, once per
// session (a RosterAck on the sum stream): the user's first tree starts
// when every member holds it, or when none more said so for as long as
// the configuration has been out (at least AnnounceDelay), within
// configWait (User.onConfigAck). Before, it started AnnounceDelay after
// the announcement: at 1,000 owners on the simulated internet 24-72
// owners were still without the configuration then, asked for it at the
// first SumStart, and the user's uplink carried 4-12 MB of copies on the
// first tree's critical path (a first tree of 31-68 one-way delays).
// An answer can be lost like any message: an owner still without the
// configuration asks again configGrace·2^k later, at most maxConfigAsks
// times a session, and the user answers each member at most that often
// per announcement (so a deviating member costs the user's uplink at most
// maxConfigAsks copies). The user also
// announces again after a tree that left an owner of its group out
// (User.startTree), each time down the tree again (a new header, so a new
// digest).

// configGrace is how long an owner that holds a head waits for the
// configuration down the tree before it asks the user: the tree's second
// level costs a fresh connection (about 5 one-way delays) and 32 copies of
// the configuration on its forwarder's uplink (1,000 owners: about 200 KB
// each, 0.5 s at 100 Mbit/s) after the first level's, about 2 s at 100 ms
// one way; twice that.
const configGrace = 4 * time.Second

// timerConfig is the owner's named timer that asks for a configuration its
// head named and the tree did not bring (configGrace).
const timerConfig = "config"

// maxConfigAsks bounds how often an owner asks for one session's
// configuration, and how often the user answers one member per
// announcement.
const maxConfigAsks = 3

// maxHeldConfigs bounds the forwarded configurations an owner holds until
// their head arrives (each at most wire.MaxControlBytes).
const maxHeldConfigs = 4

// configDigest is what a head names: SHA-256 over the envelope's bytes as
// the data user sent them (forwarders send the same bytes).
func configDigest(b []byte) []byte {
	d := sha256.Sum256(b)
	return d[:]
}

// configHead is the user's RosterHead for a FedConfig envelope b over a
// roster of n members.
func configHead(b []byte, n int) *wire.RosterHead {
	return &wire.RosterHead{Version: 1, Size: uint32(n), ChunkDigests: [][]byte{configDigest(b)}, Fanout: protocol.TreeFanout}
}

// checkConfigHead refuses a head that is not one of a configuration tree:
// a tree head (protocol.CheckTreeHead) naming one digest.
func checkConfigHead(h *wire.RosterHead) error {
	if err := protocol.CheckTreeHead(h); err != nil {
		return err
	}
	if len(h.GetChunkDigests()) != 1 {
		return fmt.Errorf("%w: a configuration head names one digest, not %d", protocol.ErrUnexpected, len(h.GetChunkDigests()))
	}
	return nil
}

// heldConfig is a forwarded FedConfig waiting for its head.
type heldConfig struct {
	from protocol.PeerID
	data []byte
	env  *wire.Envelope
}

// onConfigHead records the user's latest head and takes the held
// configurations it names.
func (o *Owner) onConfigHead(env *wire.Envelope) error {
	h := env.GetRosterHead()
	if err := checkConfigHead(h); err != nil {
		return o.drop("malformed", err)
	}
	o.head, o.headSession = h.GetChunkDigests()[0], env.GetHeader().GetSession()
	held := o.held
	o.held = nil
	var first error
	for _, c := range held {
		if bytes.Equal(configDigest(c.data), o.head) && c.env.GetHeader().GetSession() == o.headSession {
			if err := o.takeConfig(c.data, c.env); err != nil && first == nil {
				first = err
			}
			continue
		}
		o.drop(protocol.ErrNotUser.Error(), fmt.Errorf("%w: a forwarded configuration the user's head does not name", protocol.ErrNotUser))
	}
	if o.life.Phase() == lifecycle.Idle && o.asked != o.headSession && o.have != o.headSession {
		o.life.Out.SetTimer(timerConfig, configGrace)
	}
	return first
}

// onConfig takes a FedConfig that came direct on the sum stream: the
// user's own copy, or one another owner forwarded, taken only when the
// user's head names its bytes (held until a head comes, if none has).
func (o *Owner) onConfig(from protocol.PeerID, data []byte, env *wire.Envelope) error {
	if from == o.cfg.User {
		return o.takeConfig(data, env)
	}
	switch {
	case o.head == nil || env.GetHeader().GetSession() != o.headSession:
		// No head of this session yet (a later session's may follow
		// the last one's head): held for it.
		if len(o.held) == maxHeldConfigs {
			o.held = o.held[1:]
			o.drop("configuration held too long", fmt.Errorf("%w: more than %d forwarded configurations before a head", protocol.ErrNotUser, maxHeldConfigs))
		}
		o.held = append(o.held, heldConfig{from: from, data: data, env: env})
		return nil
	case !bytes.Equal(configDigest(data), o.head):
		return o.drop(protocol.ErrNotUser.Error(), fmt.Errorf("%w: a forwarded configuration the user's head does not name", protocol.ErrNotUser))
	}
	return o.takeConfig(data, env)
}

// takeConfig applies a configuration (as a control message) and forwards
// its bytes to this owner's children in the tree, whether or not this
// owner joins: its children need it either way (it is the user's message,
// unchanged, and says nothing of this owner's data).
func (o *Owner) takeConfig(data []byte, env *wire.Envelope) error {
	o.have = env.GetHeader().GetSession()
	err := o.control(env)
	o.forwardConfig(data, env.GetFedConfig())
	o.ackConfig(o.have)
	return err
}

// ackConfig tells the data user, once per session, that this owner holds
// the session's configuration (a RosterAck on the sum stream), whether or
// not it joins: the user starts the first tree when every member holds it
// (User.onConfigAck), not after a fixed delay. An owner that joined and
// opens connections for tree 1's sums (prepareSums) acks once those dials
// have ended (onPrepared): the first tree's sums then do not race every
// owner's handshakes.
func (o *Owner) ackConfig(session string) {
	if session == "" || o.acked == session || o.ackAfter == session {
		return
	}
	b, err := wire.Marshal(&wire.Envelope{Header: &wire.Header{Version: wire.Version, Session: session},
		Body: &wire.Envelope_RosterAck{RosterAck: &wire.RosterAck{Version: 1}}}, wire.MaxSumFrameBytes)
	if err != nil {
		return
	}
	o.acked = session
	o.life.Out.Send(o.cfg.User, wire.ProtoFedShamir, b)
}

// forwardConfig sends the user's configuration bytes to this owner's
// children in the tree, once per digest (addresses from the configuration
// itself). A configuration that does not parse, or whose roster does not
// hold this owner, is not forwarded.
func (o *Owner) forwardConfig(data []byte, fc *wire.FedConfig) {
	d := string(configDigest(data))
	if o.forwarded[d] {
		return
	}
	p, err := PublicFromWire(fc)
	if err != nil {
		return
	}
	i, in := slices.BinarySearch(p.Roster, o.self)
	if !in {
		return
	}
	if o.forwarded == nil {
		o.forwarded = map[string]bool{}
	}
	o.forwarded[d] = true
	lo, hi := protocol.TreeChildren(i, len(p.Roster), protocol.TreeFanout)
	for j := lo; j < hi; j++ {
		if o.book != nil && j < len(p.RosterAddrs) && len(p.RosterAddrs[j]) > 0 {
			o.book.AddAddrs(p.Roster[j], p.RosterAddrs[j])
		}
		o.life.Out.Send(p.Roster[j], wire.ProtoFedShamir, data)
	}
	if hi > lo {
		o.log.Debug("forwarded the configuration", "children", hi-lo, "bytes", len(data))
	}
}

// onPrepared is the end of the dials a configuration's ack waited for:
// the ack goes now.
func (o *Owner) onPrepared(session string) {
	if session == "" || o.ackAfter != session {
		return
	}
	o.ackAfter = ""
	o.ackConfig(session)
}

// askConfig asks the data user for the configuration of session: this
// owner holds a sum's SumStart or a tree of a session it has no
// configuration for, or its head's grace is over (its parent in the tree
// forwarded nothing). A held message asks only the first time; again is
// the retry timer's ask (configTimer), which re-arms itself until
// maxConfigAsks.
func (o *Owner) askConfig(session string, again bool) {
	if session == "" || session == o.have {
		return
	}
	if o.asked != session {
		o.asked, o.asks = session, 0
	}
	if o.asks >= maxConfigAsks || (o.asks > 0 && !again) {
		return
	}
	b, err := wire.Marshal(&wire.Envelope{Header: &wire.Header{Version: wire.Version, Session: session},
		Body: &wire.Envelope_RosterRequest{RosterRequest: &wire.RosterRequest{Version: 1}}}, wire.MaxSumFrameBytes)
	if err != nil {
		return
	}
	o.asks++
	o.log.Debug("asked the data user for the configuration", "session", session, "ask", o.asks)
	o.life.Out.Send(o.cfg.User, wire.ProtoFedShamir, b)
	if o.asks < maxConfigAsks {
		o.life.Out.SetTimer(timerConfig, configGrace<<(o.asks-1))
	}
}

// configTimer is the expiry of timerConfig: the head's grace, or a
// request's answer that did not come.
func (o *Owner) configTimer() {
	if o.life.Phase() != lifecycle.Idle {
		return
	}
	s := o.asked
	if s == "" || s == o.have {
		s = o.headSession
	}
	o.askConfig(s, true)
}

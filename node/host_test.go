package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	libp2pproto "github.com/libp2p/go-libp2p/core/protocol"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// onlyFrom is a control-topic validator: it accepts the user's
// publications, ignores the user's "stale" ones, rejects everyone else's.
func onlyFrom(user protocol.PeerID) func(protocol.PeerID, []byte) protocol.Verdict {
	return func(from protocol.PeerID, data []byte) protocol.Verdict {
		switch {
		case from != user:
			return protocol.Reject
		case string(data) == "stale":
			return protocol.Ignore
		}
		return protocol.Accept
	}
}

// TestPublishValidators: an owner accepts control messages only from the
// user; a stranger's publication is rejected and counted, a stale one is
// ignored and counted, the user's reaches the handler with the user as
// author; the validator set last decides.
func TestPublishValidators(t *testing.T) {
	user, owner, stranger := newHost(t, nil), newHost(t, nil), newHost(t, nil)
	connect(t, owner, user)
	connect(t, stranger, owner)
	var got inbox
	owner.SetHandler(got.handle)
	// A validator set again replaces the first (a node serving a second
	// session): the first one here rejects everything, so the genuine
	// publication below arrives only through the second.
	if err := owner.SetTopicValidator(wire.TopicControl, func(protocol.PeerID, []byte) protocol.Verdict { return protocol.Reject }); err != nil {
		t.Fatal(err)
	}
	if err := owner.SetTopicValidator(wire.TopicControl, onlyFrom(user.ID())); err != nil {
		t.Fatalf("replacing the validator: %v", err)
	}
	if err := owner.Join(wire.TopicControl); err != nil {
		t.Fatal(err)
	}
	if err := owner.Join(wire.TopicControl); err != nil {
		t.Fatalf("second Join: %v", err)
	}
	ctx := testCtx(t)
	for _, h := range []*Host{user, stranger} {
		if err := h.WaitTopicPeers(ctx, wire.TopicControl, 1); err != nil {
			t.Fatal(err)
		}
	}
	m := owner.cfg.Metrics
	rejected := func() float64 {
		return metricValue(t, m, "ppboost_rejected_messages_total", "topic", wire.TopicControl, "reason", "rejected")
	}
	ignored := func() float64 {
		return metricValue(t, m, "ppboost_rejected_messages_total", "topic", wire.TopicControl, "reason", "ignored")
	}
	if err := stranger.Publish(ctx, wire.TopicControl, []byte("i am the user")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stranger's publication to be rejected", func() bool { return rejected() == 1 })
	if err := user.Publish(ctx, wire.TopicControl, []byte("stale")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stale publication to be ignored", func() bool { return ignored() == 1 })
	if err := user.Publish(ctx, wire.TopicControl, []byte("genuine")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the user's publication", func() bool { return got.count() >= 1 })
	time.Sleep(100 * time.Millisecond) // let anything wrongly accepted arrive too
	msgs := got.all()
	if len(msgs) != 1 || string(msgs[0].Data) != "genuine" || msgs[0].From != user.ID() || msgs[0].Topic != wire.TopicControl {
		t.Fatalf("delivered %+v, want only the user's genuine publication", msgs)
	}
	if v := metricValue(t, m, "ppboost_messages_received_total", "kind", wire.TopicControl); v != 1 {
		t.Fatalf("received counter %v, want 1", v)
	}
	if v := metricValue(t, user.cfg.Metrics, "ppboost_messages_sent_total", "kind", wire.TopicControl); v != 2 {
		t.Fatalf("user's sent counter %v, want 2", v)
	}
	if rejected() != 1 || ignored() != 1 {
		t.Fatalf("rejected %v, ignored %v; want 1 and 1", rejected(), ignored())
	}
}

// rawHost is a bare libp2p host with no pubsub: an attacker on the wire.
func rawHost(t testing.TB) (host.Host, crypto.PrivKey) {
	t.Helper()
	sk, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := libp2p.New(libp2p.Identity(sk), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableMetrics())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, sk
}

func signed(t testing.TB, sk crypto.PrivKey, from peer.ID, topic string, data string, seq uint64) *pb.Message {
	t.Helper()
	m := &pb.Message{From: []byte(from), Data: []byte(data), Seqno: binary.BigEndian.AppendUint64(nil, seq), Topic: &topic}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if m.Signature, err = sk.Sign(append([]byte(pubsub.SignPrefix), b...)); err != nil {
		t.Fatal(err)
	}
	return m
}

func writeRPC(t testing.TB, s network.Stream, rpc *pb.RPC) {
	t.Helper()
	b, err := rpc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(append(binary.AppendUvarint(nil, uint64(len(b))), b...)); err != nil {
		t.Fatal(err)
	}
}

// TestForgedAuthorOnRawWire: an attacker speaking gossipsub directly sends
// a message claiming the user as author but signed with its own key, and
// one claiming the user with no signature. Neither reaches the handler;
// the attacker's honestly signed message reaches the validator, which
// rejects it (so the RPCs were processed), and the user's publication gets
// through.
func TestForgedAuthorOnRawWire(t *testing.T) {
	user, owner := newHost(t, nil), newHost(t, nil)
	connect(t, owner, user)
	attacker, sk := rawHost(t)
	var got inbox
	owner.SetHandler(got.handle)
	if err := owner.SetTopicValidator(wire.TopicControl, onlyFrom(user.ID())); err != nil {
		t.Fatal(err)
	}
	if err := owner.Join(wire.TopicControl); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	ownerID := owner.Host().ID()
	if err := attacker.Connect(ctx, peer.AddrInfo{ID: ownerID, Addrs: owner.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	s, err := attacker.NewStream(ctx, ownerID, pubsub.GossipSubID_v11)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Reset()
	userID, _ := peer.Decode(string(user.ID()))
	topic := wire.TopicControl
	subscribe := true
	forged := signed(t, sk, userID, topic, "forged: user as author, attacker's signature", 1)
	unsigned := &pb.Message{From: []byte(userID), Data: []byte("forged: unsigned"), Seqno: binary.BigEndian.AppendUint64(nil, 2), Topic: &topic}
	honest := signed(t, sk, attacker.ID(), topic, "attacker as itself", 3)
	writeRPC(t, s, &pb.RPC{Subscriptions: []*pb.RPC_SubOpts{{Subscribe: &subscribe, Topicid: &topic}}})
	writeRPC(t, s, &pb.RPC{Publish: []*pb.Message{forged, unsigned, honest}})
	rejected := func() float64 {
		return metricValue(t, owner.cfg.Metrics, "ppboost_rejected_messages_total", "topic", topic, "reason", "rejected")
	}
	eventually(t, "the attacker's own message to reach the validator", func() bool { return rejected() == 1 })
	if err := user.WaitTopicPeers(ctx, topic, 1); err != nil {
		t.Fatal(err)
	}
	if err := user.Publish(ctx, topic, []byte("genuine")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the user's publication", func() bool { return got.count() >= 1 })
	time.Sleep(100 * time.Millisecond)
	for _, m := range got.all() {
		if string(m.Data) != "genuine" {
			t.Fatalf("delivered %q from %s", m.Data, m.From)
		}
	}
	if rejected() != 1 {
		t.Fatalf("validator rejected %v messages, want 1: forged ones must fail the signature check first", rejected())
	}
}

func TestPublishSizeCap(t *testing.T) {
	small := func(c *Config) { c.MaxMessage = 64 << 10 }
	a, b := newHost(t, small), newHost(t, small)
	connect(t, a, b)
	var got inbox
	b.SetHandler(got.handle)
	if err := b.Join(wire.TopicShares); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if err := a.WaitTopicPeers(ctx, wire.TopicShares, 1); err != nil {
		t.Fatal(err)
	}
	limit := a.PublishCap(wire.TopicShares)
	if err := a.Publish(ctx, wire.TopicShares, make([]byte, limit+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("publish of cap+1 bytes: %v", err)
	}
	// Exactly the cap must fit in the receiver's gossipsub frame limit
	// with its signed envelope: envelopeReserve is enough.
	payload := bytes.Repeat([]byte{7}, limit)
	if err := a.Publish(ctx, wire.TopicShares, payload); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the largest allowed publication", func() bool { return got.count() == 1 })
	if !bytes.Equal(got.all()[0].Data, payload) {
		t.Fatal("payload changed in transit")
	}
}

func TestSendAndReceive(t *testing.T) {
	a, b := newHost(t, nil), newHost(t, nil)
	var got inbox
	b.SetHandler(got.handle)
	b.AddAddrs(a.ID(), a.Addrs()) // harmless: addresses of another peer
	a.AddAddrs(b.ID(), append(b.Addrs(), "/ip4/127.0.0.1/tcp/1/p2p/"+string(a.ID()), "garbage"))
	ctx := testCtx(t)
	if err := a.Send(ctx, b.ID(), wire.ProtoRing, []byte("hop")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the direct message", func() bool { return got.count() == 1 })
	m := got.all()[0]
	if m.From != a.ID() || m.Protocol != wire.ProtoRing || m.Topic != "" || string(m.Data) != "hop" {
		t.Fatalf("delivered %+v", m)
	}
	if v := metricValue(t, a.cfg.Metrics, "ppboost_rejected_messages_total", "topic", "roster", "reason", "bad address"); v != 2 {
		t.Fatalf("bad roster addresses counted %v, want 2", v)
	}
	big := make([]byte, wire.MaxSumFrameBytes)
	if err := a.Send(ctx, b.ID(), wire.ProtoShamir, big); err != nil {
		t.Fatalf("a frame of exactly the cap: %v", err)
	}
	if err := a.Send(ctx, b.ID(), wire.ProtoShamir, append(big, 0)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized frame: %v", err)
	}
	if err := a.Send(ctx, b.ID(), wire.ProtoSession, make([]byte, wire.MaxSumFrameBytes+1)); err != nil {
		t.Fatalf("session frames may be larger than sum frames: %v", err)
	}
	if err := a.Send(ctx, b.ID(), "/ppboost/other/1.0.0", nil); !errors.Is(err, ErrUnknownProtocol) {
		t.Fatalf("unknown protocol: %v", err)
	}
	if err := a.Send(ctx, "not-a-peer", wire.ProtoRing, nil); err == nil {
		t.Fatal("send to a bad peer id succeeded")
	}
	eventually(t, "the two large frames", func() bool { return got.count() == 3 })
	// A message to oneself is delivered locally.
	var self inbox
	a.SetHandler(self.handle)
	if err := a.Send(ctx, a.ID(), wire.ProtoRing, []byte("me")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the message to self", func() bool { return self.count() == 1 })
	if m := self.all()[0]; m.From != a.ID() || string(m.Data) != "me" {
		t.Fatalf("self delivery %+v", m)
	}
}

// rawStream opens a stream to h on protoID from a fresh host, bypassing Send.
func rawStream(t testing.TB, h *Host, protoID string) network.Stream {
	t.Helper()
	attacker, _ := rawHost(t)
	ctx := testCtx(t)
	if err := attacker.Connect(ctx, peer.AddrInfo{ID: h.Host().ID(), Addrs: h.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	s, err := attacker.NewStream(ctx, h.Host().ID(), libp2pproto.ID(protoID))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// expectReset reads until the peer's verdict: a reset, not a clean EOF.
func expectReset(t testing.TB, s network.Stream) {
	t.Helper()
	s.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.ReadAll(s)
	if !errors.Is(err, network.ErrReset) {
		t.Fatalf("stream ended with %v, want a reset", err)
	}
}

// TestBadStreamsAreReset: garbage on raw streams is reset and counted, and
// the receiver keeps working.
func TestBadStreamsAreReset(t *testing.T) {
	b := newHost(t, func(c *Config) { c.StreamTimeout = 300 * time.Millisecond })
	var got inbox
	b.SetHandler(got.handle)
	tests := []struct {
		name, proto, reason string
		write               []byte
		keepOpen            bool
	}{
		{"oversized length", wire.ProtoRing, "oversize frame", binary.AppendUvarint(nil, wire.MaxSumFrameBytes+1), false},
		{"oversized session frame", wire.ProtoSession, "oversize frame", binary.AppendUvarint(nil, wire.MaxControlBytes+1), false},
		{"malformed varint", wire.ProtoShamir, "bad length prefix", bytes.Repeat([]byte{0xff}, 11), false},
		{"truncated frame", wire.ProtoRing, "truncated frame", append(binary.AppendUvarint(nil, 100), make([]byte, 10)...), false},
		{"stalled sender", wire.ProtoShamir, "timeout", binary.AppendUvarint(nil, 100), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := got.count()
			s := rawStream(t, b, tc.proto)
			if _, err := s.Write(tc.write); err != nil {
				t.Fatal(err)
			}
			if !tc.keepOpen {
				s.CloseWrite()
			}
			expectReset(t, s)
			s.Reset()
			reason := func() float64 {
				return metricValue(t, b.cfg.Metrics, "ppboost_rejected_messages_total", "topic", tc.proto, "reason", tc.reason)
			}
			eventually(t, "the bad stream to be counted", func() bool { return reason() == 1 })
			if d := got.count() - before; d != 0 {
				t.Fatalf("%d messages delivered from the bad stream, want 0", d)
			}
		})
	}
	// Still alive.
	a := newHost(t, nil)
	a.AddAddrs(b.ID(), b.Addrs())
	if err := a.Send(testCtx(t), b.ID(), wire.ProtoSession, []byte("still alive")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a message after the garbage", func() bool {
		all := got.all()
		return len(all) > 0 && string(all[len(all)-1].Data) == "still alive"
	})
}

// The direct protocols are registered when the host starts, so that a peer
// that connects learns them from identify and opens its first stream on
// one without negotiating it (a round trip; issue 31), but before
// SetHandler their streams are refused: reset, counted, never delivered.
func TestNoHandlerNoStreams(t *testing.T) {
	a, b := newHost(t, nil), newHost(t, nil)
	connect(t, a, b)
	eventually(t, "identify to name b's direct protocols", func() bool {
		ps, err := a.Host().Peerstore().SupportsProtocols(b.Host().ID(), libp2pproto.ID(wire.ProtoSession), libp2pproto.ID(wire.ProtoShamir))
		return err == nil && len(ps) == 2
	})
	_ = a.Send(testCtx(t), b.ID(), wire.ProtoSession, []byte("anyone?")) // written lazily; b resets it
	rejected := func() float64 {
		return metricValue(t, b.cfg.Metrics, "ppboost_rejected_messages_total", "topic", wire.ProtoSession, "reason", "no handler")
	}
	eventually(t, "b to refuse the stream", func() bool { return rejected() == 1 })
	var got inbox
	b.SetHandler(got.handle)
	eventually(t, "a message after SetHandler", func() bool {
		_ = a.Send(testCtx(t), b.ID(), wire.ProtoSession, []byte("now"))
		return got.count() > 0
	})
	for _, m := range got.all() {
		if string(m.Data) == "anyone?" {
			t.Fatal("a message sent before SetHandler was delivered")
		}
	}
}

// TestAllowList: a gated host takes streams from its friend, refuses a
// stranger's (the stream fails; Connect alone may not), counts the refusal,
// and does not dial the stranger either.
func TestAllowList(t *testing.T) {
	friend := newHost(t, nil)
	gated := newHost(t, func(c *Config) { c.AllowList = []string{string(friend.ID())} })
	stranger := newHost(t, nil)
	var got, strangerGot inbox
	gated.SetHandler(got.handle)
	stranger.SetHandler(strangerGot.handle)
	ctx := testCtx(t)
	friend.AddAddrs(gated.ID(), gated.Addrs())
	if err := friend.Send(ctx, gated.ID(), wire.ProtoSession, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the friend's message", func() bool { return got.count() == 1 })
	stranger.AddAddrs(gated.ID(), gated.Addrs())
	if err := stranger.Send(ctx, gated.ID(), wire.ProtoSession, []byte("let me in")); err == nil {
		t.Fatal("a peer outside the allow-list opened a stream")
	}
	refused := func() float64 {
		return metricValue(t, gated.cfg.Metrics, "ppboost_rejected_messages_total", "topic", "gater", "reason", "not allowed")
	}
	if refused() < 1 {
		t.Fatal("the refusal was not counted")
	}
	gated.AddAddrs(stranger.ID(), stranger.Addrs())
	if err := gated.Send(ctx, stranger.ID(), wire.ProtoSession, []byte("hello?")); err == nil {
		t.Fatal("the gated host dialled a peer outside its allow-list")
	}
	time.Sleep(100 * time.Millisecond)
	for _, m := range got.all() {
		if m.From == stranger.ID() {
			t.Fatal("a message from outside the allow-list was delivered")
		}
	}
	if strangerGot.count() != 0 {
		t.Fatal("the stranger received a message from the gated host")
	}
}

func writePSK(t testing.TB, hexByte string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "swarm.key")
	mustWrite(t, p, "/key/swarm/psk/1.0.0/\n/base16/\n"+strings.Repeat(hexByte, 32)+"\n", 0o600)
	return p
}

func TestPrivateNetworkIsTCPOnly(t *testing.T) {
	psk := writePSK(t, "ab")
	both := func(c *Config) {
		c.PSKFile = psk
		c.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"}
	}
	a, b := newHost(t, both), newHost(t, both)
	for _, addr := range append(a.Addrs(), b.Addrs()...) {
		if strings.Contains(addr, "quic") || strings.Contains(addr, "/udp/") {
			t.Fatalf("private network listens on %s", addr)
		}
	}
	var got inbox
	a.SetHandler(got.handle)
	connect(t, b, a)
	ctx := testCtx(t)
	if err := b.Send(ctx, a.ID(), wire.ProtoSession, []byte("psk")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a message inside the private network", func() bool { return got.count() == 1 })
	// Each failed dial is named for what it is, not "context deadline
	// exceeded" (a short context: a key mismatch stalls until it ends).
	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		t.Cleanup(cancel)
		return c
	}
	outsider := newHost(t, nil)
	if err := outsider.Connect(short(), a.Addrs()[0]); !errors.Is(err, ErrPSKRequired) {
		t.Fatalf("a peer without the key: %v, want %v", err, ErrPSKRequired)
	}
	other := newHost(t, func(c *Config) { c.PSKFile = writePSK(t, "cd") })
	err := other.Connect(short(), a.Addrs()[0])
	if !errors.Is(err, ErrPSKMismatch) || !strings.Contains(err.Error(), "private network key (PSK) mismatch with "+string(a.ID())) {
		t.Fatalf("a peer with another key: %v, want a PSK mismatch with %s", err, a.ID())
	}
	t.Logf("wrong key: %v", err)
	if err := other.Connect(short(), outsider.Addrs()[0]); !errors.Is(err, ErrPSKNotUsed) {
		t.Fatalf("a peer with a key dialling one without: %v, want %v", err, ErrPSKNotUsed)
	}
	// A bootstrap dial with the wrong key logs the mismatch.
	var logs syncBuffer
	newHost(t, func(c *Config) {
		c.PSKFile, c.Bootstrap, c.DialTimeout, c.Logger = writePSK(t, "ef"), a.Addrs()[:1], time.Second, hclogTo(&logs)
	})
	eventually(t, "the bootstrap log to name the PSK mismatch", func() bool {
		return strings.Contains(logs.String(), "private network key (PSK) mismatch with "+string(a.ID()))
	})
	if _, err := New(context.Background(), func() Config {
		c := testConfig(t)
		c.PSKFile = filepath.Join(t.TempDir(), "missing.key")
		return c
	}()); err == nil || !strings.Contains(err.Error(), "psk") {
		t.Fatalf("missing psk file: %v", err)
	}
}

func TestWaitTopicPeersTimeout(t *testing.T) {
	h := newHost(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	const topic = "/ppboost/empty/1.0.0"
	err := h.WaitTopicPeers(ctx, topic, 5)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitTopicPeers: %v", err)
	}
	for _, want := range []string{topic, "0 of 5"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if err := h.WaitTopicPeers(ctx, topic, 0); err != nil {
		t.Fatalf("waiting for zero peers: %v", err)
	}
}

func TestCloseIsIdempotentAndFinal(t *testing.T) {
	a, b := newHost(t, nil), newHost(t, nil)
	connect(t, a, b)
	a.SetHandler(func(protocol.Message) {})
	if err := a.Join(wire.TopicControl); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := testCtx(t)
	for name, err := range map[string]error{
		"Join":              a.Join(wire.TopicShares),
		"Publish":           a.Publish(ctx, wire.TopicControl, []byte("x")),
		"Send":              a.Send(ctx, b.ID(), wire.ProtoRing, []byte("x")),
		"Send to self":      a.Send(ctx, a.ID(), wire.ProtoRing, []byte("x")),
		"WaitTopicPeers":    a.WaitTopicPeers(ctx, wire.TopicControl, 1),
		"SetTopicValidator": a.SetTopicValidator(wire.TopicShares, onlyFrom(b.ID())),
		"Connect":           a.Connect(ctx, b.Addrs()[0]),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// freePort reserves and releases a loopback TCP port.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestBootstrapRetriesAndRedials: an owner started before its bootstrap
// peer keeps dialling until the peer is up, and dials again when the
// connection is closed.
func TestBootstrapRetriesAndRedials(t *testing.T) {
	hubKey := newKey(t)
	sk, err := LoadKey(hubKey)
	if err != nil {
		t.Fatal(err)
	}
	hubID, _ := peer.IDFromPrivateKey(sk)
	port := freePort(t)
	hubAddr := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/%s", port, hubID)
	owner := newHost(t, func(c *Config) { c.Bootstrap = []string{hubAddr} })
	time.Sleep(300 * time.Millisecond) // a few failed dials
	if owner.ConnectedPeers() != 0 {
		t.Fatal("connected to a hub that is not running")
	}
	hub := newHost(t, func(c *Config) {
		c.KeyFile = hubKey
		c.ListenAddrs = []string{fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", port)}
	})
	connected := func() bool { return owner.Host().Network().Connectedness(hubID) == network.Connected }
	eventually(t, "the owner to reach the late hub", connected)
	// The owner counts the connection as soon as its side of the handshake
	// ends; the hub may still be adding its side, and a ClosePeer before
	// that closes nothing.
	eventually(t, "the hub to see the owner", func() bool {
		return hub.Host().Network().Connectedness(owner.Host().ID()) == network.Connected
	})
	first := owner.Host().Network().ConnsToPeer(hubID)[0].ID()
	if err := hub.Host().Network().ClosePeer(owner.Host().ID()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the owner to re-dial the hub", func() bool {
		cs := owner.Host().Network().ConnsToPeer(hubID)
		return len(cs) > 0 && cs[0].ID() != first
	})
	if !owner.Host().ConnManager().IsProtected(hubID, bootstrapTag) {
		t.Fatal("the bootstrap peer is not protected from connection trimming")
	}
}

// TestNewContextBoundsBackgroundWork: when New's context ends, the
// bootstrap loop stops dialling; Close still works.
func TestNewContextBoundsBackgroundWork(t *testing.T) {
	cfg := testConfig(t)
	cfg.Logger = testLogger(t, "host")
	cfg.Bootstrap = []string{fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/%s", freePort(t), randomPeer(t))}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	cancel()
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("background goroutines still running after New's context ended")
	}
	if err := h.WaitTopicPeers(context.Background(), wire.TopicControl, 1); err == nil || errors.Is(err, ErrClosed) {
		t.Fatalf("WaitTopicPeers after New's context ended: %v", err)
	}
}

func TestNewRefusesBadSetup(t *testing.T) {
	cfg := testConfig(t)
	cfg.ExpectedPeers = 0
	if _, err := New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "ExpectedPeers") {
		t.Fatalf("bad config: %v", err)
	}
	cfg = testConfig(t)
	os.Chmod(cfg.KeyFile, 0o644)
	if _, err := New(context.Background(), cfg); !errors.Is(err, ErrKeyPermissions) {
		t.Fatalf("world-readable key: %v", err)
	}
	// (A busy listen port also fails New, but libp2p then leaks the failed
	// swarm's goroutines, which goleak would report.)
}

// TestManyOwnersOneUser: 200 owner hosts bootstrap to one data-user host on
// loopback; every owner connects, joins the control topic and receives the
// user's publication after WaitTopicPeers, and reaches the user with a
// direct message.
func TestManyOwnersOneUser(t *testing.T) {
	if testing.Short() {
		t.Skip("200 hosts: slow")
	}
	const n = 200
	user := newHost(t, func(c *Config) { c.ExpectedPeers = n })
	var got inbox
	user.SetHandler(got.handle)
	var recv atomic.Int64
	owners := make([]*Host, n)
	for i := range owners {
		owners[i] = newHost(t, func(c *Config) { c.Bootstrap = user.Addrs()[:1] })
		owners[i].SetHandler(func(m protocol.Message) {
			if m.Topic == wire.TopicControl && string(m.Data) == "round 1" {
				recv.Add(1)
			}
		})
		if err := owners[i].Join(wire.TopicControl); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	start := time.Now()
	if err := user.WaitTopicPeers(ctx, wire.TopicControl, n); err != nil {
		t.Fatal(err)
	}
	if c := user.ConnectedPeers(); c != n {
		t.Fatalf("user connected to %d peers, want %d", c, n)
	}
	t.Logf("%d owners on the control topic after %v", n, time.Since(start))
	if err := user.Publish(ctx, wire.TopicControl, []byte("round 1")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every owner to receive the publication", func() bool { return recv.Load() == n })
	var wg sync.WaitGroup
	for _, o := range owners {
		wg.Add(1)
		go func(o *Host) {
			defer wg.Done()
			if err := o.Send(ctx, user.ID(), wire.ProtoSession, []byte(o.ID())); err != nil {
				t.Error(err)
			}
		}(o)
	}
	wg.Wait()
	eventually(t, "every owner's direct message", func() bool { return got.count() == n })
	from := map[protocol.PeerID]bool{}
	for _, m := range got.all() {
		if string(m.Data) != string(m.From) {
			t.Fatalf("message %q attributed to %s", m.Data, m.From)
		}
		from[m.From] = true
	}
	if len(from) != n {
		t.Fatalf("messages from %d distinct owners, want %d", len(from), n)
	}
	t.Logf("published, and all %d direct replies received, %v after start", n, time.Since(start))
}

// TestSendIsOrdered: one sender's messages to one peer on one protocol
// arrive in the order Send was called (one long-lived stream, one writer).
func TestSendIsOrdered(t *testing.T) {
	a, b := newHost(t, nil), newHost(t, nil)
	connect(t, a, b)
	var got inbox
	b.SetHandler(got.handle)
	ctx := testCtx(t)
	const n = 200
	for i := 0; i < n; i++ {
		if err := a.Send(ctx, b.ID(), wire.ProtoShamir, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every message", func() bool { return got.count() == n })
	for i, m := range got.all() {
		if string(m.Data) != fmt.Sprint(i) {
			t.Fatalf("message %d is %q: out of order", i, m.Data)
		}
	}
}

// TestSimultaneousDials: two hosts that have never met send to each other
// at the same moment, as owners do at the first secure sum. With TCP
// SO_REUSEPORT both dials could become one TCP connection with two TLS
// clients and fail; every pair must get both messages through.
func TestSimultaneousDials(t *testing.T) {
	const pairs = 20
	ctx := testCtx(t)
	for i := 0; i < pairs; i++ {
		a, b := newHost(t, nil), newHost(t, nil)
		var got inbox
		a.SetHandler(got.handle)
		b.SetHandler(got.handle)
		a.AddAddrs(b.ID(), b.Addrs())
		b.AddAddrs(a.ID(), a.Addrs())
		errs := make(chan error, 2)
		var start sync.WaitGroup
		start.Add(1)
		for _, d := range [][2]*Host{{a, b}, {b, a}} {
			go func() {
				start.Wait()
				errs <- d[0].Send(ctx, d[1].ID(), wire.ProtoShamir, []byte("share"))
			}()
		}
		start.Done()
		for j := 0; j < 2; j++ {
			if err := <-errs; err != nil {
				t.Fatalf("pair %d: %v", i, err)
			}
		}
		a.Close()
		b.Close()
	}
}

package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/davidlazar/go-crypto/salsa20"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// A private-network key that differs from the peer's does not fail the
// handshake: libp2p's pnet layer (XSalsa20 under the key, one random
// 24-byte nonce per direction) decrypts the peer's bytes into garbage, the
// multistream negotiation above it waits for a line that never comes, and
// the dial ends with "context deadline exceeded". After a failed dial,
// pskProbe asks the peer's TCP address directly: it speaks the pnet layer
// with this node's key (or none) and reads the peer's first message, which
// any libp2p listener sends at once: the multistream header.
var (
	// ErrPSKMismatch: the peer runs a private network under another key.
	ErrPSKMismatch = errors.New("private network key (PSK) mismatch")
	// ErrPSKRequired: the peer runs a private network and this node has no key.
	ErrPSKRequired = errors.New("the peer requires a private network key (PSK) and this node has none")
	// ErrPSKNotUsed: this node has a key and the peer runs no private network.
	ErrPSKNotUsed = errors.New("this node has a private network key (PSK) and the peer runs no private network")
)

// msHeader is multistream-select's first message: a varint length and the
// protocol line.
var msHeader = append([]byte{19}, "/multistream/1.0.0\n"...)

// pskProbeTimeout bounds one probe.
const pskProbeTimeout = 3 * time.Second

const pnetNonce = 24

// pskProbe connects to addr over TCP and reports ErrPSKMismatch,
// ErrPSKRequired or ErrPSKNotUsed when the peer's first bytes show one; nil
// when they show the same key (or no key on both sides), or when the probe
// cannot tell (no answer, a non-TCP address).
func pskProbe(ctx context.Context, addr ma.Multiaddr, psk pnet.PSK) error {
	na, err := manet.ToNetAddr(addr)
	if err != nil {
		return nil
	}
	if _, ok := na.(*net.TCPAddr); !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, pskProbeTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", na.String())
	if err != nil {
		return nil
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	var key *[32]byte
	if len(psk) == 32 {
		key = (*[32]byte)(psk)
	}
	// Our side: the header, under the key if we have one.
	out := msHeader
	if key != nil {
		nonce := make([]byte, pnetNonce)
		if _, err := rand.Read(nonce); err != nil {
			return nil
		}
		enc := make([]byte, len(msHeader))
		salsa20.New(key, nonce).XORKeyStream(enc, msHeader)
		out = append(nonce, enc...)
	}
	if _, err := c.Write(out); err != nil {
		return nil
	}
	// Their side: the header, after a nonce if they have a key.
	in := make([]byte, pnetNonce+len(msHeader))
	n, _ := io.ReadFull(c, in)
	in = in[:n]
	plain := len(in) >= len(msHeader) && bytes.Equal(in[:len(msHeader)], msHeader)
	switch {
	case plain && key == nil:
		return nil // neither side has a key
	case plain:
		return ErrPSKNotUsed
	case len(in) < pnetNonce+len(msHeader):
		return nil // too little to tell
	case key == nil:
		return ErrPSKRequired
	}
	dec := make([]byte, len(msHeader))
	salsa20.New(key, in[:pnetNonce]).XORKeyStream(dec, in[pnetNonce:])
	if bytes.Equal(dec, msHeader) {
		return nil // same key: the dial failed for another reason
	}
	return ErrPSKMismatch
}

// explainDial runs after a failed dial to ai: if a probe of one of ai's TCP
// addresses shows a private-network key problem, the error says so instead
// of "context deadline exceeded". Only handshake-like failures are probed
// (a refused or unreachable address is what it says).
func (x *Host) explainDial(ai peer.AddrInfo, err error) error {
	if err == nil || x.ctx.Err() != nil || !handshakeFailure(err) {
		return err
	}
	addrs := ai.Addrs
	if len(addrs) == 0 {
		addrs = x.h.Peerstore().Addrs(ai.ID)
	}
	for _, a := range addrs {
		if transportOf(a) != "tcp" {
			continue
		}
		if perr := pskProbe(x.ctx, a, x.psk); perr != nil {
			return fmt.Errorf("%w with %s at %s: %w", perr, ai.ID, a, err)
		}
	}
	return err
}

// handshakeFailure: a dial that reached the peer and then stalled or was
// cut, as a key mismatch does.
func handshakeFailure(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isTimeout(err) {
		return true
	}
	s := err.Error()
	for _, k := range []string{"negotiate security", "context deadline exceeded", "connection reset", "EOF", "multistream"} {
		if bytes.Contains([]byte(s), []byte(k)) {
			return true
		}
	}
	return false
}

// Package netem emulates wide-area links inside one process: per-link
// one-way delay, jitter, loss and bandwidth on real net.Conn (TCP) and
// net.PacketConn (UDP, so QUIC) sockets.
//
// It exists so that tests and experiments can put real libp2p hosts, built
// as node.New builds them, behind slow links (node.WithTCPDialer,
// node.WithPacketConnWrapper). go-libp2p's mocknet cannot stand in for
// this: it does not delay small writes followed by CloseWrite, which is
// exactly what a ppboost message is.
//
// Model. Every node has a name; a link is directed (from, to) and has its
// own Link parameters (Emulator.SetLink), or the emulator's default.
//
//   - UDP: a datagram written to an address is dropped with probability
//     Loss, otherwise it waits for the link to be free (Bandwidth: size /
//     Bandwidth seconds of transmission, one datagram after another), then
//     Delay plus a uniform jitter in [-Jitter, +Jitter]; datagrams may
//     overtake each other when the jitter exceeds their spacing, as on a
//     real path. Every node's packet conn is wrapped, so each direction is
//     delayed once, at its sender (the way Linux netem shapes egress).
//   - TCP: a dial returns one round trip (the two links' delays) after the
//     loopback's handshake, as the SYN and SYN-ACK would take; then a
//     connection is wrapped at the side that dialled it, in both
//     directions (the listening side is a plain socket): bytes written are
//     held for the link from dialler to listener, bytes read for the link
//     back. A write is cut into segments of MSS bytes; each one is
//     transmitted at Bandwidth, delayed by Delay and jitter, and never
//     released before the one ahead of it (TCP delivers in order, so jitter
//     adds head-of-line blocking, not reordering). A lost segment arrives
//     one retransmission timeout late (RTO, default max(200 ms, 3 x Delay):
//     Linux's minimum RTO, or a round trip and a half on a long path), and
//     every segment behind it waits for it.
//
// What it does not model: congestion control (the sender's window is
// unlimited, so a loss costs one RTO and never a rate cut), queue overflow
// at a bottleneck, and delays below the Go timer's resolution (about 1 ms,
// more on a loaded machine). Emulated delays are added to the loopback's
// own (tens of microseconds).
//
// Memory is bounded: a direction holds at most MaxQueued bytes in flight;
// a writer (or the reader of the socket) then waits, which is TCP's flow
// control. A UDP link holds at most MaxQueued bytes too and drops the rest,
// as a full router queue would.
//
// It may be imported by node and by tests and experiments, never by the
// protocol packages.
//
// Where it sits: below node: it imports nothing of ppboost; node wraps its
// dialers and listeners with it, and the WAN experiments configure it.
package netem

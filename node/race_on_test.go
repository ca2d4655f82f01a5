//go:build race

package node

// raceEnabled: the race detector slows libp2p's handshakes about tenfold.
const raceEnabled = true

package simulate

import (
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
)

// What the three runners share about their networks: every run builds one
// deterministic memnet network (seeded, in virtual time) and reads its
// traffic and its participants' drop counters the same way.

// sent sums the messages and bytes the peers ids sent.
func sent(net *memnet.Network, ids []protocol.PeerID) (msgs, bytes int64) {
	for _, id := range ids {
		s := net.Stats(id)
		msgs += s.MsgsSent
		bytes += s.BytesSent
	}
	return msgs, bytes
}

// addDrops adds one participant's drop counters (by reason) to into.
func addDrops(into, from map[string]int) {
	for k, v := range from {
		into[k] += v
	}
}

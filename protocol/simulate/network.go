package simulate

import (
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
)

// What the three runners share about their networks: every run builds one
// deterministic memnet network (seeded, in virtual time) and reads its
// traffic and its participants' drop counters the same way.

// netOptions is a run's network: deterministic from seed, every link with
// the given delay, jitter and loss, logging through log's "memnet".
func netOptions(seed uint64, delay, jitter time.Duration, drop float64, log hclog.Logger) memnet.Options {
	return memnet.Options{Seed: seed, Deterministic: true, Delay: delay, Jitter: jitter, DropRate: drop, Logger: log.Named("memnet")}
}

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

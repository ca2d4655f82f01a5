package session

import (
	"crypto/sha256"

	"github.com/ppboost/ppboost/protocol/wire"
)

// sentTwice says whether env is a message an owner may receive twice,
// byte for byte: a Select, a Learner or an Alpha, which a user sends each
// owner directly (User.toAudience, sendSelect) and which a user may also
// publish on the control topic (as one before issue 31's last step did).
func sentTwice(env *wire.Envelope) bool {
	switch env.GetBody().(type) {
	case *wire.Envelope_Select, *wire.Envelope_Learner, *wire.Envelope_Alpha:
		return true
	}
	return false
}

// digest names a message by its bytes.
type digest [16]byte

func digestOf(b []byte) digest {
	s := sha256.Sum256(b)
	return digest(s[:16])
}

// maxRecentDigests bounds recentDigests: more than the control messages
// of a few attempts (a Select, a Learner and an Alpha each, and the
// SumStarts that do not pass here), so that the second copy of a message
// (which follows the first within a gossip's few hops) is still known.
const maxRecentDigests = 256

// recentDigests is a bounded set of the latest digests added: the oldest
// is forgotten when a new one would exceed maxRecentDigests.
type recentDigests struct {
	set  map[digest]struct{}
	ring []digest
	next int
}

func (r *recentDigests) has(d digest) bool {
	_, ok := r.set[d]
	return ok
}

func (r *recentDigests) add(d digest) {
	if r.set == nil {
		r.set = make(map[digest]struct{}, maxRecentDigests)
	}
	if r.has(d) {
		return
	}
	if len(r.ring) < maxRecentDigests {
		r.ring = append(r.ring, d)
	} else {
		delete(r.set, r.ring[r.next])
		r.ring[r.next] = d
		r.next = (r.next + 1) % maxRecentDigests
	}
	r.set[d] = struct{}{}
}

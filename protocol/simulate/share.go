package simulate

import (
	"sync"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/session"
	"github.com/ppboost/ppboost/protocol/wire"
)

// shared is one run's session.Sharing: the simulated owners of a run share
// what they decode from one delivered message and what they derive from one
// roster, so that 10^5 owners decode a control message once and hold one
// copy of a 10^5-entry roster and of each participant list. It belongs to
// one run (Run creates it, and it is garbage with the run), holds a bounded
// number of entries of each kind (the oldest go first), and is safe for
// concurrent use.
//
// Its keys are identities the simulator controls, or content digests:
//   - a delivered message by the address and length of its bytes: the
//     in-memory network copies a published payload once and hands that one
//     slice to every subscriber, and an entry holds the slice (its key is a
//     pointer into it), so the address is not reused while the entry lives;
//   - a roster by session, version and the digest every owner checks it
//     against (an owner gets the shared roster only for the digest it
//     received in Select);
//   - a learner by the decoded message it came from (a shared envelope's)
//     and the classes and features it is checked against;
//   - a participant list by the roster slice it was cut from (a shared
//     roster's, held by the key) and the exclusion bitmap.
//
// Production owners get no Sharing and share nothing.
type shared struct {
	mu       sync.Mutex
	envs     bounded[bufKey, *wire.Envelope]
	rosters  bounded[rosterKey, *session.Roster]
	learners bounded[learnerKey, learnerEntry]
	parts    bounded[partsKey, []protocol.PeerID]
	chunks   bounded[*wire.Roster, []byte]
}

// Bounds of the shared entries. A round publishes a handful of control
// messages (Select, roster chunks, SumStarts, Learner, Alpha, results) that
// every owner receives within the links' delay, so the newest 256 cover the
// messages in flight; a session has a few roster versions and a round a few
// learners and exclusion bitmaps. A participant list of 10^5 owners is
// 1.6 MB and a roster several, so those bounds stay small: at 10^5 owners
// the heap sits near GOMEMLIMIT and every retained megabyte costs garbage
// collection. An evicted entry costs a second decode (once: the next owner
// finds the new entry), never a wrong answer.
const (
	maxSharedEnvelopes = 256
	maxSharedRosters   = 4
	maxSharedLearners  = 16
	maxSharedParts     = 8
	maxSharedChunks    = 64
)

func newShared() *shared {
	return &shared{
		envs:     newBounded[bufKey, *wire.Envelope](maxSharedEnvelopes),
		rosters:  newBounded[rosterKey, *session.Roster](maxSharedRosters),
		learners: newBounded[learnerKey, learnerEntry](maxSharedLearners),
		parts:    newBounded[partsKey, []protocol.PeerID](maxSharedParts),
		chunks:   newBounded[*wire.Roster, []byte](maxSharedChunks),
	}
}

type bufKey struct {
	first *byte // &data[0]: holding it keeps the delivered bytes alive
	n     int
	max   int // the size cap it was decoded under
}

type rosterKey struct {
	session string
	version uint32
	digest  string
}

type learnerKey struct {
	l                 *wire.Learner
	classes, features int
}

type learnerEntry struct {
	base *boost.Base
	err  error
}

type partsKey struct {
	first *protocol.PeerID // &roster[0]: holding it keeps the roster alive
	n     int
	excl  string
}

var _ session.Sharing = (*shared)(nil)

// Envelope decodes a delivered message once per run. Decoding errors are
// not kept (a garbage message is rare and each owner counts its own drop).
func (s *shared) Envelope(data []byte, maxBytes int) (*wire.Envelope, error) {
	if len(data) == 0 {
		return wire.Unmarshal(data, maxBytes)
	}
	k := bufKey{&data[0], len(data), maxBytes}
	s.mu.Lock()
	env, ok := s.envs.get(k)
	s.mu.Unlock()
	if ok {
		return env, nil
	}
	env, err := wire.Unmarshal(data, maxBytes)
	if err != nil {
		return env, err
	}
	s.mu.Lock()
	s.envs.put(k, env)
	s.mu.Unlock()
	return env, nil
}

// Roster builds a roster version once per run (a failed build is not kept:
// the next owner's chunks may be complete).
func (s *shared) Roster(sess string, version uint32, digest []byte, build func() (*session.Roster, error)) (*session.Roster, error) {
	k := rosterKey{sess, version, string(digest)}
	s.mu.Lock()
	r, ok := s.rosters.get(k)
	s.mu.Unlock()
	if ok {
		return r, nil
	}
	r, err := build()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.rosters.put(k, r)
	s.mu.Unlock()
	return r, nil
}

// Learner decodes a published learner once per run, its error included
// (every owner would find the same one).
func (s *shared) Learner(l *wire.Learner, classes, features int, decode func() (*boost.Base, error)) (*boost.Base, error) {
	k := learnerKey{l, classes, features}
	s.mu.Lock()
	e, ok := s.learners.get(k)
	s.mu.Unlock()
	if ok {
		return e.base, e.err
	}
	b, err := decode()
	s.mu.Lock()
	s.learners.put(k, learnerEntry{b, err})
	s.mu.Unlock()
	return b, err
}

// ChunkDigest hashes a shared roster chunk once per run (the key holds
// the decoded chunk, as the shared envelope does).
func (s *shared) ChunkDigest(c *wire.Roster) []byte {
	s.mu.Lock()
	d, ok := s.chunks.get(c)
	s.mu.Unlock()
	if ok {
		return d
	}
	d = session.RosterChunkDigest(c)
	s.mu.Lock()
	s.chunks.put(c, d)
	s.mu.Unlock()
	return d
}

// Parts cuts a participant list once per roster and bitmap.
func (s *shared) Parts(roster []protocol.PeerID, excl []byte, build func() []protocol.PeerID) []protocol.PeerID {
	if len(roster) == 0 {
		return build()
	}
	k := partsKey{&roster[0], len(roster), string(excl)}
	s.mu.Lock()
	p, ok := s.parts.get(k)
	s.mu.Unlock()
	if ok {
		return p
	}
	p = build()
	s.mu.Lock()
	s.parts.put(k, p)
	s.mu.Unlock()
	return p
}

// bounded is a map that keeps its newest max entries (first in, first out).
// It is not safe for concurrent use.
type bounded[K comparable, V any] struct {
	m     map[K]V
	order []K // insertion order; order[head:] are live
	head  int
	max   int
}

func newBounded[K comparable, V any](max int) bounded[K, V] {
	return bounded[K, V]{m: make(map[K]V, max), max: max}
}

func (b *bounded[K, V]) get(k K) (V, bool) {
	v, ok := b.m[k]
	return v, ok
}

func (b *bounded[K, V]) put(k K, v V) {
	if _, ok := b.m[k]; ok {
		b.m[k] = v
		return
	}
	if len(b.m) >= b.max {
		var zero K
		delete(b.m, b.order[b.head])
		b.order[b.head] = zero // let the evicted key's memory go
		b.head++
	}
	if b.head > b.max { // compact: order stays under 2 max
		n := copy(b.order, b.order[b.head:])
		clear(b.order[n:])
		b.order, b.head = b.order[:n], 0
	}
	b.m[k] = v
	b.order = append(b.order, k)
}

func (b *bounded[K, V]) len() int { return len(b.m) }

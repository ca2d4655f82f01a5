package release

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/ppboost/ppboost/protocol"
)

// Name is the canonical name of one owner release: what the value is,
// derived by the owner from its own state (the session it joined, the
// round or tree it is at, the node or leaves and chunk its plan has),
// never a string or a number the data user sent. Two requests for the same
// quantity — a retransmission, a re-formed sum, another attempt number,
// another spelling of a purpose, a re-announcement, a restart — have the
// same Name, and the gate hands both the same value.
type Name struct {
	System  string // "wc", "fed" or "pfds"
	Session string
	// Kind is what is released: "share" (a W&C LDP share or share-sum
	// dealing), "err" (an err dealing), "leaves" and "node" (federated
	// sums), "tree" and "data" (PFDS).
	Kind  string
	Round int // W&C round, federated tree; 0 for a per-session release
	Node  int // federated node sums: the node (breadth-first); else 0
	Chunk int // federated sums: the chunk of the vector; else 0
	// Attempt is the round attempt, only where each attempt is a release
	// charged on its own (the W&C err dealing); 0 elsewhere, so that a new
	// attempt number names the same value.
	Attempt int
}

// String prints n injectively (the session is quoted): the key the gate
// remembers and binds a value under.
func (n Name) String() string {
	return n.System + "/" + strconv.Quote(n.Session) + "/" + n.Kind + "/r" + strconv.Itoa(n.Round) +
		"/n" + strconv.Itoa(n.Node) + "/c" + strconv.Itoa(n.Chunk) + "/a" + strconv.Itoa(n.Attempt)
}

// Charge is the ledger charge that covers a name: its key (one key may
// cover several names: a federated tree's ensemble covers the tree's node
// and leaf sums), the round and attempt recorded with it, and the
// mechanism whose loss it is. The key lies in the name's session
// (protocol.KeyInSession), so that SpentIn sees it.
type Charge struct {
	Key            string
	Round, Attempt uint32
	Mech           Mechanism
}

// Gate errors.
var (
	// ErrSessionCap: the charge would take the owner's spend in one session
	// past its per-session cap.
	ErrSessionCap = errors.New("release: per-session epsilon cap")
	// ErrNoSecret: the gate has no noise secret to derive values from.
	ErrNoSecret = errors.New("release: the gate has no noise secret")
)

// memo is a value the gate handed out, with the digest it is bound to.
type memo struct {
	digest [32]byte
	v      any
}

// Values is the release gate's memory: the one place where an owner's
// noisy values are made. Value hands out, for a canonical Name, the same
// value every time it is asked (see Value); values are remembered for the
// session in memory and bound by digest in the ledger, and their noise is
// drawn from a stream keyed by the owner's secret and the name, so that a
// restart re-derives the same bytes. Not safe for concurrent use: it is
// part of a role's machine.
type Values struct {
	Ledger protocol.Ledger
	// Secret keys the noise of every value (HMAC-SHA256 of the name): kept
	// by the owner (the CLI derives it from the node's identity key), so
	// that the same name gives the same noise across restarts.
	Secret []byte
	// SessionMax, if positive, is the most this owner spends in one
	// session (protocol.Ledger.SpentIn): a charge past it is refused.
	SessionMax float64
	// Forget switches the memory off (memo, binds and the name-keyed
	// noise: every request draws fresh noise and charges only what the
	// ledger does not hold yet). Only for negative controls: it is the
	// behaviour the gate exists to prevent.
	Forget bool
	// Observe, if set, is told every value handed out: fresh is whether it
	// was made now (not a remembered one).
	Observe func(n Name, fresh bool)

	memo   map[string]memo
	draws  uint64 // Forget: fresh streams
	fprint [32]byte
	keyed  bool
}

// secretPrint is a digest of the secret (bound into every value digest, so
// that a value made under another secret is never re-derived as if equal).
func (g *Values) secretPrint() [32]byte {
	if !g.keyed {
		g.fprint = sha256.Sum256(append([]byte("ppboost/release-secret/v1\x00"), g.Secret...))
		g.keyed = true
	}
	return g.fprint
}

// Noise is the noise stream of name n: ChaCha8 keyed by
// HMAC-SHA256(secret, name).
func (g *Values) Noise(n Name) *rand.Rand {
	mac := hmac.New(sha256.New, g.Secret)
	mac.Write([]byte("ppboost/release-noise/v1\x00"))
	mac.Write([]byte(n.String()))
	if g.Forget {
		g.draws++
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], g.draws)
		mac.Write(b[:])
	}
	var key [32]byte
	copy(key[:], mac.Sum(nil))
	return rand.New(rand.NewChaCha8(key))
}

// Value returns the value of n, made by make from n's noise stream the
// first time and the same value ever after:
//
//   - remembered (this incarnation): the value is returned as it is, if
//     input (what the value is computed from, before noise) has the same
//     digest; another digest is refused with protocol.ErrRebound (the data
//     user equivocated what the value depends on) and nothing is made;
//   - not remembered: c is charged (spend and fsync) unless the ledger
//     holds c.Key already (an earlier name of the same charge, or this name
//     before a restart); the name is bound to the digest in the ledger
//     (ErrRebound if it was bound to another: the same noise on another
//     input would publish the difference); then make runs with n's noise
//     stream, so that a restart re-derives the very bytes it made before.
//
// The caller checks that n is inside its session's plan before it asks:
// the gate cannot know the plan. eps is what this call charged (0 when the
// value was covered by an earlier charge); fresh says whether make ran.
func (g *Values) Value(n Name, c Charge, input []byte, make func(noise *rand.Rand) (any, error)) (v any, eps float64, fresh bool, err error) {
	if g.Ledger == nil {
		return nil, 0, false, fmt.Errorf("release %s: no ledger", n)
	}
	if len(g.Secret) == 0 {
		return nil, 0, false, fmt.Errorf("release %s: %w", n, ErrNoSecret)
	}
	if !protocol.KeyInSession(c.Key, n.Session) {
		return nil, 0, false, fmt.Errorf("release %s: ledger key %q is outside session %q", n, c.Key, n.Session)
	}
	name := n.String()
	digest := g.digest(name, c, input)
	if m, ok := g.memo[name]; ok && !g.Forget {
		if m.digest != digest {
			return nil, 0, false, fmt.Errorf("release %s: %w", n, protocol.ErrRebound)
		}
		g.observe(n, false)
		return m.v, 0, false, nil
	}
	if !g.Ledger.Contributed(c.Key) {
		e := c.Mech.Epsilon()
		if g.SessionMax > 0 && e > 0 && g.Ledger.SpentIn(n.Session)+e > g.SessionMax*(1+1e-12) {
			return nil, 0, false, fmt.Errorf("release %s: %w: charging %.4g with %.4g spent in session %s exceeds this owner's cap %.4g",
				n, ErrSessionCap, e, g.Ledger.SpentIn(n.Session), n.Session, g.SessionMax)
		}
		if eps, err = (Gate{Ledger: g.Ledger}).Charge(c.Key, c.Round, c.Attempt, c.Mech); err != nil {
			return nil, 0, false, err
		}
	}
	if !g.Forget {
		if err := g.Ledger.Bind(name, digest[:]); err != nil {
			return nil, eps, false, fmt.Errorf("release %s: %w", n, err)
		}
	}
	v, err = make(g.Noise(n))
	if err != nil {
		return nil, eps, false, err
	}
	if !g.Forget {
		if g.memo == nil {
			g.memo = map[string]memo{}
		}
		g.memo[name] = memo{digest: digest, v: v}
	}
	g.observe(n, true)
	return v, eps, true, nil
}

func (g *Values) observe(n Name, fresh bool) {
	if g.Observe != nil {
		g.Observe(n, fresh)
	}
}

// Remembered reports whether n's value is in memory (this incarnation).
func (g *Values) Remembered(n Name) bool {
	_, ok := g.memo[n.String()]
	return ok
}

// EndSession forgets the values of session (memory only: the ledger keeps
// their binds, and a later request re-derives them from the secret).
func (g *Values) EndSession(session string) {
	for k := range g.memo {
		if sessionOf(k) == session {
			delete(g.memo, k)
		}
	}
}

// sessionOf reads the quoted session back out of a Name's String.
func sessionOf(name string) string {
	i := 0
	for i < len(name) && name[i] != '/' {
		i++
	}
	if i+1 >= len(name) {
		return ""
	}
	q, err := strconv.QuotedPrefix(name[i+1:])
	if err != nil {
		return ""
	}
	s, _ := strconv.Unquote(q)
	return s
}

// digest binds a value to its name, its charge's mechanism, the owner's
// secret and its input.
func (g *Values) digest(name string, c Charge, input []byte) [32]byte {
	h := sha256.New()
	fp := g.secretPrint()
	h.Write(fp[:])
	h.Write([]byte(name))
	h.Write([]byte{0})
	if c.Mech != nil {
		h.Write([]byte(c.Mech.String()))
	}
	h.Write([]byte{0})
	h.Write(input)
	var d [32]byte
	copy(d[:], h.Sum(nil))
	return d
}

// Floats appends the bits of vs to b: the input of a value computed from
// floats (Value's input).
func Floats(b []byte, vs ...float64) []byte {
	for _, v := range vs {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

package protocol

import (
	"crypto/sha256"
	"fmt"

	"github.com/ppboost/ppboost/protocol/wire"
)

// TreeFanout is the fan-out k of the trees that carry a large message from
// the data user to every member of a roster (the W&C roster, a federated
// session's configuration): the user sends it to the first k members and
// the member at index i to members (i+1)·k … (i+1)·k+k−1, whatever the
// roster's size, so no peer sends more than k copies and every member is
// reached once: within two levels up to k + k² = 1,056 members, three up to
// 33,824.
const TreeFanout = 32

// TreeChildren are the indices [lo, hi) of the roster members that the
// member at index i forwards to in a tree of fan-out k over n members
// (i = -1: the data user's, the first k).
func TreeChildren(i, n, k int) (lo, hi int) {
	lo = (i + 1) * k
	return min(lo, n), min(lo+k, n)
}

// CheckTreeHead refuses a RosterHead that cannot announce a tree's
// content: no digest, a digest that is not SHA-256, more digests than
// members, an empty roster, or a fan-out other than TreeFanout (the data
// user does not choose how many peers an owner sends to).
func CheckTreeHead(h *wire.RosterHead) error {
	d := h.GetChunkDigests()
	if len(d) == 0 || h.GetSize() == 0 || len(d) > int(h.GetSize()) || h.GetFanout() != TreeFanout {
		return fmt.Errorf("%w: tree head with %d digests, %d members, fan-out %d (want %d)", ErrUnexpected, len(d), h.GetSize(), h.GetFanout(), TreeFanout)
	}
	for _, x := range d {
		if len(x) != sha256.Size {
			return fmt.Errorf("%w: tree head digest of %d bytes", ErrUnexpected, len(x))
		}
	}
	return nil
}

package protocol

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

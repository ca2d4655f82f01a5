package securesum

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/ppboost/ppboost/protocol/wire"
)

// A bitmap names a subset of a sorted list of n peers (the roster, or an
// instance's parties) in ceil(n/8) bytes, so that exclusion and dealer sets
// cost n/8 bytes instead of n peer ids: 12.5 KB for 10^5 owners, inside the
// 64 KiB sum frame whatever the network size.

func newBitmap(n int) []byte { return make([]byte, (n+7)/8) }

func setBit(b []byte, i int) { b[i/8] |= 1 << (i % 8) }

func hasBit(b []byte, i int) bool { return i/8 < len(b) && b[i/8]&(1<<(i%8)) != 0 }

func countBits(b []byte) int {
	n := 0
	for _, x := range b {
		n += bits.OnesCount8(x)
	}
	return n
}

// checkBitmap accepts an empty bitmap (no members) or one of exactly
// ceil(n/8) bytes with no bit at or past n.
func checkBitmap(b []byte, n int) error {
	if len(b) == 0 {
		return nil
	}
	if len(b) != (n+7)/8 {
		return fmt.Errorf("%w: bitmap of %d bytes for %d members", ErrMalformed, len(b), n)
	}
	if r := n % 8; r != 0 && b[len(b)-1]>>r != 0 {
		return fmt.Errorf("%w: bitmap names members past %d", ErrMalformed, n)
	}
	return nil
}

// Excluded is the bitmap over a roster of n of the members a SumStart
// leaves out, from either of its encodings (the bitmap, or the ascending
// indices); nil when it leaves out nobody.
func Excluded(start *wire.SumStart, n int) ([]byte, error) {
	b, idx := start.GetExcluded(), start.GetExcludedIndex()
	if len(idx) == 0 {
		if err := checkBitmap(b, n); err != nil {
			return nil, err
		}
		return b, nil
	}
	if len(b) > 0 {
		return nil, fmt.Errorf("%w: SumStart names its excluded members both as a bitmap and as indices", ErrMalformed)
	}
	out := newBitmap(n)
	prev := -1
	for _, i := range idx {
		if int(i) <= prev || int(i) >= n {
			return nil, fmt.Errorf("%w: excluded index %d after %d in a roster of %d (want ascending, below %d)", ErrMalformed, i, prev, n, n)
		}
		setBit(out, int(i))
		prev = int(i)
	}
	return out, nil
}

// setExcluded names the members of excl (a non-empty bitmap over a roster
// of n) in start, as indices when they take fewer bytes than the bitmap.
func setExcluded(start *wire.SumStart, excl []byte, n int) {
	var idx []uint32
	size := 0
	for i := 0; i < n && size < len(excl); i++ {
		if hasBit(excl, i) {
			idx = append(idx, uint32(i))
			size += varintLen(uint64(i))
		}
	}
	if size < len(excl) {
		start.ExcludedIndex = idx
		return
	}
	start.Excluded = excl
}

func varintLen(x uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], x)
}

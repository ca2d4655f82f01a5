package pfds

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrCodec marks a malformed encoded tree.
var ErrCodec = errors.New("pfds: malformed tree encoding")

// MaxNodes caps a decoded tree (a 4096-leaf tree of binary splits has 8191
// nodes; categorical splits make fewer).
const MaxNodes = 1 << 20

// AppendTree appends the public part of t: the node count, then every node
// in preorder as a uvarint (0 for a leaf, else attribute+1), followed by the
// split value (8 bytes, little-endian IEEE 754) for a numeric attribute or
// the label (uvarint) for a leaf. Children counts follow from the domain.
// Leaf counts are not encoded.
func AppendTree(b []byte, t *Tree, dom *Domain) []byte {
	b = binary.AppendUvarint(b, uint64(len(t.Nodes)))
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if n.Attr == Leaf {
			b = binary.AppendUvarint(b, 0)
			b = binary.AppendUvarint(b, uint64(n.Label))
			continue
		}
		b = binary.AppendUvarint(b, uint64(n.Attr)+1)
		if dom.Attrs[n.Attr].Cats == 0 {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(n.Split))
		}
	}
	return b
}

// DecodeTree parses what AppendTree wrote and checks it against the public
// domain and depth: attributes and labels in range, split values finite and
// inside the attribute's active interval, no categorical attribute twice
// on a path, at most hmax levels, and exactly the bytes of one tree. It
// returns the tree and the number of bytes consumed.
func DecodeTree(b []byte, dom *Domain, hmax int) (*Tree, int, error) {
	d := decoder{b: b, dom: dom, hmax: hmax}
	count, err := d.uvarint()
	if err != nil {
		return nil, 0, err
	}
	if count == 0 || count > MaxNodes || count > uint64(len(b)) {
		return nil, 0, fmt.Errorf("%w: %d nodes", ErrCodec, count)
	}
	d.t.Nodes = make([]Node, 0, count)
	d.lo, d.hi = make([]float64, len(dom.Attrs)), make([]float64, len(dom.Attrs))
	d.used = make([]bool, len(dom.Attrs))
	for a := range dom.Attrs {
		d.lo[a], d.hi[a] = -1, 1
	}
	if _, err := d.node(1, int(count)); err != nil {
		return nil, 0, err
	}
	if len(d.t.Nodes) != int(count) {
		return nil, 0, fmt.Errorf("%w: header says %d nodes, the tree has %d", ErrCodec, count, len(d.t.Nodes))
	}
	return &d.t, d.off, nil
}

type decoder struct {
	b      []byte
	off    int
	dom    *Domain
	hmax   int
	t      Tree
	lo, hi []float64
	used   []bool
}

func (d *decoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad varint at byte %d", ErrCodec, d.off)
	}
	d.off += n
	return v, nil
}

func (d *decoder) node(level, limit int) (int32, error) {
	if level > d.hmax {
		return 0, fmt.Errorf("%w: deeper than %d levels", ErrCodec, d.hmax)
	}
	if len(d.t.Nodes) >= limit {
		return 0, fmt.Errorf("%w: more nodes than the header's %d", ErrCodec, limit)
	}
	self := int32(len(d.t.Nodes))
	d.t.Nodes = append(d.t.Nodes, Node{Attr: Leaf, Level: level})
	tag, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if tag == 0 {
		label, err := d.uvarint()
		if err != nil {
			return 0, err
		}
		if label >= uint64(d.dom.Classes) {
			return 0, fmt.Errorf("%w: label %d of %d classes", ErrCodec, label, d.dom.Classes)
		}
		d.t.Nodes[self].Label = int(label)
		return self, nil
	}
	if level == d.hmax {
		return 0, fmt.Errorf("%w: split at the last level %d", ErrCodec, level)
	}
	if tag > uint64(len(d.dom.Attrs)) {
		return 0, fmt.Errorf("%w: attribute %d of %d", ErrCodec, tag-1, len(d.dom.Attrs))
	}
	a := int(tag - 1)
	at := d.dom.Attrs[a]
	var children []int32
	if at.Cats > 0 {
		if d.used[a] {
			return 0, fmt.Errorf("%w: categorical attribute %d twice on a path", ErrCodec, a)
		}
		d.used[a] = true
		children = make([]int32, at.Cats)
		for k := range children {
			if children[k], err = d.node(level+1, limit); err != nil {
				return 0, err
			}
		}
		d.used[a] = false
	} else {
		if len(d.b)-d.off < 8 {
			return 0, fmt.Errorf("%w: truncated split value", ErrCodec)
		}
		v := math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.off:]))
		d.off += 8
		if !(v >= d.lo[a] && v <= d.hi[a]) {
			return 0, fmt.Errorf("%w: split %v outside [%v, %v]", ErrCodec, v, d.lo[a], d.hi[a])
		}
		d.t.Nodes[self].Split = v
		children = make([]int32, 2)
		old := d.hi[a]
		d.hi[a] = v
		if children[0], err = d.node(level+1, limit); err != nil {
			return 0, err
		}
		d.hi[a] = old
		old = d.lo[a]
		d.lo[a] = v
		if children[1], err = d.node(level+1, limit); err != nil {
			return 0, err
		}
		d.lo[a] = old
	}
	n := &d.t.Nodes[self]
	n.Attr, n.Children = a, children
	return self, nil
}

// MaxLeafCount bounds a published noisy leaf count of PFDS-cv: a count is
// at most a share's rows plus geometric noise, far below it; larger values
// are malformed (a row total past it would overflow nothing, but no honest
// agent sends one).
const MaxLeafCount = 1 << 40

// LeafCounts are PFDS-cv's published counts of t: every leaf's noisy class
// counts, leaves in preorder and classes in order. The variant's counts
// are integers (the geometric mechanism); a count that is not is an error
// (a faithful tree's Laplace counts are private and never published).
func LeafCounts(t *Tree, classes int) ([]int64, error) {
	var out []int64
	for _, j := range t.Leaves() {
		c := t.Nodes[j].Counts
		if len(c) != classes {
			return nil, fmt.Errorf("%w: leaf %d has %d counts for %d classes", ErrCodec, j, len(c), classes)
		}
		for _, x := range c {
			if x != math.Trunc(x) || math.Abs(x) > MaxLeafCount {
				return nil, fmt.Errorf("%w: leaf %d count %v is not an integer within %d", ErrCodec, j, x, int64(MaxLeafCount))
			}
			out = append(out, int64(x))
		}
	}
	return out, nil
}

// SetLeafCounts gives a decoded tree the counts LeafCounts listed (one per
// leaf and class, each within MaxLeafCount); a leaf's label must be the
// argmax of its counts, as MakeVariantTree made it.
func SetLeafCounts(t *Tree, classes int, counts []int64) error {
	leaves := t.Leaves()
	if len(counts) != len(leaves)*classes {
		return fmt.Errorf("%w: %d leaf counts for %d leaves of %d classes", ErrCodec, len(counts), len(leaves), classes)
	}
	for k, j := range leaves {
		c := make([]float64, classes)
		for l := range c {
			x := counts[k*classes+l]
			if x > MaxLeafCount || x < -MaxLeafCount {
				return fmt.Errorf("%w: leaf %d count %d over %d", ErrCodec, j, x, int64(MaxLeafCount))
			}
			c[l] = float64(x)
		}
		if argmax(c) != t.Nodes[j].Label {
			return fmt.Errorf("%w: leaf %d has label %d, its counts' argmax is %d", ErrCodec, j, t.Nodes[j].Label, argmax(c))
		}
		t.Nodes[j].Counts = c
	}
	return nil
}

package pfds

import (
	"fmt"

	"github.com/ppboost/ppboost/dataset"
)

// Attribute is one raw attribute of a record as the public schema describes
// it. A numeric attribute is one scaled feature with the public domain
// [-1, 1]; a categorical one is a run of one-hot features.
type Attribute struct {
	Name   string
	Offset int // first feature index
	Cats   int // categories (one-hot width); 0 for a numeric attribute
}

// Categorical reports whether the attribute branches on every category.
func (a Attribute) Categorical() bool { return a.Cats > 0 }

// Branches is the number of children a split on a has.
func (a Attribute) Branches() int {
	if a.Cats > 0 {
		return a.Cats
	}
	return 2
}

// Domain is the public description of the records: the attributes, the
// feature dimension and the number of classes. It is derived from the
// schema alone.
type Domain struct {
	Attrs   []Attribute
	Dim     int
	Classes int
}

// NewDomain derives the domain of d from its schema (never from its rows).
// Without a schema every feature is a numeric attribute.
func NewDomain(d *dataset.Dataset) (*Domain, error) {
	return DomainOf(d.Schema, d.Dim(), d.NumClasses())
}

// DomainOf derives the domain from a schema; s may be nil, in which case
// every one of dim features is numeric.
func DomainOf(s *dataset.Schema, dim, classes int) (*Domain, error) {
	if classes < 2 {
		return nil, fmt.Errorf("pfds: %d classes, want at least 2", classes)
	}
	dom := &Domain{Dim: dim, Classes: classes}
	if s == nil {
		for j := 0; j < dim; j++ {
			dom.Attrs = append(dom.Attrs, Attribute{Name: fmt.Sprintf("x%d", j), Offset: j})
		}
		return dom, nil
	}
	off := 0
	for _, c := range s.Columns {
		switch c.Kind {
		case dataset.KindNumeric:
			dom.Attrs = append(dom.Attrs, Attribute{Name: c.Name, Offset: off})
			off++
		case dataset.KindCategorical:
			dom.Attrs = append(dom.Attrs, Attribute{Name: c.Name, Offset: off, Cats: len(c.Categories)})
			off += len(c.Categories)
		}
	}
	if off != dim {
		return nil, fmt.Errorf("pfds: schema has %d features, the data %d", off, dim)
	}
	if len(dom.Attrs) == 0 {
		return nil, fmt.Errorf("pfds: schema has no attributes")
	}
	return dom, nil
}

// value returns attribute a of the encoded row x: the scaled value of a
// numeric attribute, the category index (as a float) of a categorical one
// (the first hot feature; 0 if none is hot).
func (dom *Domain) value(a int, x []float64) float64 {
	at := dom.Attrs[a]
	if at.Cats == 0 {
		return x[at.Offset]
	}
	return float64(dom.category(a, x))
}

func (dom *Domain) category(a int, x []float64) int {
	at := dom.Attrs[a]
	for k := 0; k < at.Cats; k++ {
		if x[at.Offset+k] > 0.5 {
			return k
		}
	}
	return 0
}

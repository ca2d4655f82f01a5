package wire

import (
	"fmt"

	"github.com/ppboost/ppboost/dataset"
)

// SchemaOf is the wire form of a public schema (nil for nil).
func SchemaOf(s *dataset.Schema) *Schema {
	if s == nil {
		return nil
	}
	w := &Schema{Version: uint32(s.Version), Label: s.Label, Classes: s.Classes}
	for _, c := range s.Columns {
		w.Columns = append(w.Columns, &SchemaColumn{Name: c.Name, Kind: c.Kind, Min: c.Min, Max: c.Max, Categories: c.Categories})
	}
	return w
}

// ToDataset is the schema w carries, not validated (dataset.Schema.Validate
// does that). A missing column is an error naming it.
func (w *Schema) ToDataset() (*dataset.Schema, error) {
	if w == nil {
		return nil, fmt.Errorf("%w: Schema: missing", ErrMalformed)
	}
	s := &dataset.Schema{Version: int(w.Version), Label: w.Label, Classes: w.Classes}
	for i, c := range w.Columns {
		if c == nil {
			return nil, fmt.Errorf("%w: Schema.columns[%d]: missing", ErrMalformed, i)
		}
		s.Columns = append(s.Columns, dataset.Column{Name: c.Name, Kind: c.Kind, Min: c.Min, Max: c.Max, Categories: c.Categories})
	}
	return s, nil
}

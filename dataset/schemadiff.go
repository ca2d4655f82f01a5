package dataset

import (
	"fmt"
	"slices"
	"strings"
)

// SchemaDiff is one difference between a node's own schema ("here") and
// another one ("there", e.g. the data user's announced schema).
type SchemaDiff struct {
	Column string // the column, or "" for the label and the classes
	What   string // "label", "classes", "missing here", "missing there", "kind", "bounds", "categories", "order", "version"
	Here   string // this node's value (empty when missing)
	There  string // the other's value
}

// String names the difference with both values, e.g.
// `column "age": bounds [17, 90] here, [0, 100] there`.
func (d SchemaDiff) String() string {
	switch d.What {
	case "missing here":
		return fmt.Sprintf("column %q missing here", d.Column)
	case "missing there":
		return fmt.Sprintf("column %q missing there", d.Column)
	}
	subject := "schema"
	if d.Column != "" {
		subject = fmt.Sprintf("column %q", d.Column)
	}
	return fmt.Sprintf("%s: %s %s here, %s there", subject, d.What, d.Here, d.There)
}

// Brief names the difference without this node's values (a node that
// inferred its bounds from its data must not send them to a peer).
func (d SchemaDiff) Brief() string {
	switch {
	case d.What == "missing here" || d.What == "missing there":
		return fmt.Sprintf("column %q %s", d.Column, d.What)
	case d.Column != "":
		return fmt.Sprintf("column %q: %s differ", d.Column, d.What)
	case d.What == "classes":
		return "the classes differ"
	}
	return "the " + d.What + " differs"
}

// DiffSchemas lists how here differs from there: the label, the classes,
// columns missing on either side, and per shared column its kind, bounds
// and categories; the column order last (it changes the digest too).
func DiffSchemas(here, there *Schema) []SchemaDiff {
	var out []SchemaDiff
	if here == nil || there == nil {
		return []SchemaDiff{{What: "schema", Here: fmt.Sprint(here != nil), There: fmt.Sprint(there != nil)}}
	}
	if here.Version != there.Version {
		out = append(out, SchemaDiff{What: "version", Here: fmt.Sprint(here.Version), There: fmt.Sprint(there.Version)})
	}
	if here.Label != there.Label {
		out = append(out, SchemaDiff{What: "label", Here: fmt.Sprintf("%q", here.Label), There: fmt.Sprintf("%q", there.Label)})
	}
	if !slices.Equal(here.Classes, there.Classes) {
		out = append(out, SchemaDiff{What: "classes", Here: list(here.Classes), There: list(there.Classes)})
	}
	theirs := map[string]*Column{}
	for i := range there.Columns {
		theirs[there.Columns[i].Name] = &there.Columns[i]
	}
	ours := map[string]bool{}
	var shared, sharedThere []string
	for i := range here.Columns {
		c := &here.Columns[i]
		ours[c.Name] = true
		t := theirs[c.Name]
		if t == nil {
			out = append(out, SchemaDiff{Column: c.Name, What: "missing there"})
			continue
		}
		shared = append(shared, c.Name)
		switch {
		case c.Kind != t.Kind:
			out = append(out, SchemaDiff{Column: c.Name, What: "kind", Here: c.Kind, There: t.Kind})
		case c.Kind == "numeric" && (c.Min != t.Min || c.Max != t.Max):
			out = append(out, SchemaDiff{Column: c.Name, What: "bounds",
				Here: fmt.Sprintf("[%g, %g]", c.Min, c.Max), There: fmt.Sprintf("[%g, %g]", t.Min, t.Max)})
		case c.Kind == "categorical" && !slices.Equal(c.Categories, t.Categories):
			out = append(out, SchemaDiff{Column: c.Name, What: "categories", Here: list(c.Categories), There: list(t.Categories)})
		}
	}
	for _, t := range there.Columns {
		if !ours[t.Name] {
			out = append(out, SchemaDiff{Column: t.Name, What: "missing here"})
		} else {
			sharedThere = append(sharedThere, t.Name)
		}
	}
	if !slices.Equal(shared, sharedThere) {
		out = append(out, SchemaDiff{What: "column order", Here: list(shared), There: list(sharedThere)})
	}
	return out
}

// list prints at most 8 values.
func list(v []string) string {
	if len(v) > 8 {
		return fmt.Sprintf("[%s ... (%d)]", strings.Join(v[:8], " "), len(v))
	}
	return "[" + strings.Join(v, " ") + "]"
}

// JoinDiffs joins at most max differences with "; " (String or Brief), and
// says how many more there are.
func JoinDiffs(d []SchemaDiff, max int, brief bool) string {
	var parts []string
	for i, x := range d {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(d)-max))
			break
		}
		if brief {
			parts = append(parts, x.Brief())
		} else {
			parts = append(parts, x.String())
		}
	}
	return strings.Join(parts, "; ")
}

package dataset

import "testing"

func TestDiffSchemas(t *testing.T) {
	base := func() *Schema {
		return &Schema{Version: 1, Label: "y", Classes: []string{"a", "b"}, Columns: []Column{
			{Name: "age", Kind: "numeric", Min: 0, Max: 100},
			{Name: "colour", Kind: "categorical", Categories: []string{"red", "blue"}},
			{Name: "x", Kind: "numeric", Min: -1, Max: 1},
		}}
	}
	if d := DiffSchemas(base(), base()); len(d) != 0 {
		t.Fatalf("equal schemas differ: %v", d) // the negative control
	}
	here, there := base(), base()
	here.Columns[0].Min, here.Columns[0].Max = 17, 90
	here.Columns[1].Categories = []string{"red", "green"}
	there.Columns = append(there.Columns[:2], Column{Name: "z", Kind: "numeric", Min: 0, Max: 1})
	there.Classes = []string{"a", "b", "c"}
	d := DiffSchemas(here, there)
	want := `schema: classes [a b] here, [a b c] there; column "age": bounds [17, 90] here, [0, 100] there; ` +
		`column "colour": categories [red green] here, [red blue] there; column "x" missing there; column "z" missing here`
	if got := JoinDiffs(d, 8, false); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	brief := `the classes differ; column "age": bounds differ; column "colour": categories differ; column "x" missing there; column "z" missing here`
	if got := JoinDiffs(d, 8, true); got != brief {
		t.Fatalf("got  %s\nwant %s", got, brief)
	}
	if got := JoinDiffs(d, 2, true); got != `the classes differ; column "age": bounds differ; and 3 more` {
		t.Fatalf("capped: %s", got)
	}
	// Same columns in another order: the digest differs, and so does this.
	there = base()
	there.Columns[0], there.Columns[2] = there.Columns[2], there.Columns[0]
	if got := JoinDiffs(DiffSchemas(base(), there), 8, true); got != "the column order differs" {
		t.Fatalf("order: %s", got)
	}
}

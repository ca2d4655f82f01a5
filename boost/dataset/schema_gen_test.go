package dataset

import "testing"

// TestAdultSchemaFile keeps testdata/adult.schema.json (the fuzz seed and an
// example of the schema format) equal to AdultSchema.
func TestAdultSchemaFile(t *testing.T) {
	s, err := LoadSchema("testdata/adult.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if s.Digest() != AdultSchema().Digest() {
		t.Fatal("testdata/adult.schema.json differs from AdultSchema()")
	}
}

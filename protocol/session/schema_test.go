package session

import (
	"errors"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
	"google.golang.org/protobuf/proto"
)

func testSchema() *dataset.Schema {
	return &dataset.Schema{Version: 1, Label: "y", Classes: []string{"a", "b"}, Columns: []dataset.Column{
		{Name: "age", Kind: "numeric", Min: 17, Max: 90}, {Name: "x", Kind: "numeric", Min: -1, Max: 1}}}
}

func announced(s *dataset.Schema) *wire.SessionConfig {
	return &wire.SessionConfig{Schema: wire.SchemaOf(s), SchemaDigest: s.Digest()}
}

// A schema that differs is named column by column: this owner's log gets
// both sides' values, the Refuse only what differs (the owner's bounds may
// be inferred from its data). Without the announced schema, or with one
// that is not the digest's, only the digests are compared.
func TestSchemaMismatchNamesColumns(t *testing.T) {
	own, theirs := testSchema(), testSchema()
	theirs.Columns[0].Min, theirs.Columns[0].Max = 0, 100
	theirs.Columns = append(theirs.Columns[:1], dataset.Column{Name: "z", Kind: "numeric", Min: 0, Max: 1})
	err := schemaMismatch(announced(theirs), own)
	var se *schemaError
	if !errors.As(err, &se) || !errors.Is(err, protocol.ErrBadConfig) {
		t.Fatalf("err %v", err)
	}
	if want := `column "age": bounds [17, 90] here, [0, 100] there; column "x" missing there; column "z" missing here`; !strings.HasSuffix(se.local, want) {
		t.Fatalf("local %q, want suffix %q", se.local, want)
	}
	if want := `column "age": bounds differ; column "x" missing there; column "z" missing here`; !strings.HasSuffix(err.Error(), want) || strings.Contains(err.Error(), "17") {
		t.Fatalf("sent %q, want suffix %q and none of this owner's values", err, want)
	}
	forged := announced(theirs)
	forged.SchemaDigest = own.Digest() + "0"
	for name, w := range map[string]*wire.SessionConfig{"no schema": {SchemaDigest: theirs.Digest()}, "schema not the digest's": forged} {
		if err := schemaMismatch(w, own); err == nil || strings.Contains(err.Error(), "column") || !strings.Contains(err.Error(), "does not carry its schema") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Whatever the (pinned) data user announces as its schema, the owner's
// explanation is an error, never a panic, and what it sends fits a Refuse.
func FuzzSchemaMismatch(f *testing.F) {
	b, _ := proto.Marshal(wire.SchemaOf(testSchema()))
	f.Add(b)
	b, _ = proto.Marshal(&wire.Schema{Version: 1, Label: "y", Classes: []string{"a"}})
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var ws wire.Schema
		if proto.Unmarshal(raw, &ws) != nil {
			return
		}
		digest := ""
		if s, err := ws.ToDataset(); err == nil {
			digest = s.Digest()
		}
		w := &wire.SessionConfig{Schema: &ws, SchemaDigest: digest}
		err := schemaMismatch(w, testSchema())
		if err == nil || !errors.Is(err, protocol.ErrBadConfig) {
			t.Fatalf("err %v", err)
		}
		if n := len(err.Error()); n > 64<<10 {
			t.Fatalf("a %d-byte explanation", n)
		}
	})
}

package wire_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/protocol/wire"
)

// TestReleaseInventoryCoversOwnerMessages ties PROTOCOL.md's release
// inventory to the wire: every Envelope body is declared in ppboost.proto
// with its sender in a comment ("user ->", "owner ->", or secure-sum
// traffic, which owners deal into), and every body an owner sends must
// have a row in the inventory's wire column. A new message kind that owners
// send fails this test until the inventory says what it releases.
func TestReleaseInventoryCoversOwnerMessages(t *testing.T) {
	proto, err := os.ReadFile("ppboost.proto")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := os.ReadFile("../../PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	inv := inventoryWire(t, string(spec))
	line := regexp.MustCompile(`^\s*(\w+) (\w+) = \d+;\s*//\s*(.*)$`)
	declared := map[string]string{} // Envelope oneof field name -> sender comment
	pfds := map[string]string{}     // PfdsMessage oneof message -> sender comment
	in, msg := false, ""
	for _, l := range strings.Split(string(proto), "\n") {
		switch {
		case strings.HasPrefix(l, "message "):
			msg = strings.Fields(l)[1]
		case strings.Contains(l, "oneof body"):
			in = true
		case in && strings.TrimSpace(l) == "}":
			in = false
		case in:
			m := line.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("ppboost.proto: oneof body line without a sender comment: %q", l)
			}
			if msg == "PfdsMessage" {
				pfds[m[1]] = strings.ToLower(m[3])
			} else {
				declared[m[2]] = m[1] + "|" + m[3]
			}
		}
	}
	// PFDS agents (the owners of PFDS) send PfdsMessage bodies: each an
	// agent sends needs a "PFDS <name>" row (PfdsTree -> PFDS `Tree`).
	pf := (&wire.PfdsMessage{}).ProtoReflect().Descriptor().Oneofs().ByName("body").Fields()
	if pf.Len() != len(pfds) {
		t.Fatalf("PfdsMessage has %d bodies, ppboost.proto's oneof lists %d", pf.Len(), len(pfds))
	}
	agents := 0
	for m, sender := range pfds {
		switch {
		case strings.HasPrefix(sender, "agent"):
			agents++
			if !inv["PFDS "+strings.TrimPrefix(m, "Pfds")] {
				t.Errorf("%s is sent by PFDS agents but has no PFDS row in PROTOCOL.md's release inventory", m)
			}
		case !strings.HasPrefix(sender, "announcer"):
			t.Errorf("ppboost.proto: PfdsMessage body %s's comment %q names no sender (agent -> or announcer ->)", m, sender)
		}
	}
	if agents != 2 {
		t.Errorf("%d PfdsMessage bodies sent by agents, want 2 (tree, data)", agents)
	}
	fields := (&wire.Envelope{}).ProtoReflect().Descriptor().Oneofs().ByName("body").Fields()
	if fields.Len() != len(declared) {
		t.Fatalf("Envelope has %d bodies, ppboost.proto's oneof lists %d", fields.Len(), len(declared))
	}
	owners := 0
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		d, ok := declared[string(f.Name())]
		if !ok {
			t.Fatalf("Envelope body %s is not in ppboost.proto's oneof", f.Name())
		}
		msg, comment, _ := strings.Cut(d, "|")
		sender := strings.ToLower(comment)
		byOwner := strings.HasPrefix(sender, "owner") || strings.Contains(sender, "secure-sum")
		if !byOwner && !strings.HasPrefix(sender, "user") && !strings.HasPrefix(sender, "federated dpboost: user") {
			t.Errorf("ppboost.proto: %s's comment %q names no sender (owner -> or user ->)", f.Name(), sender)
		}
		if byOwner {
			owners++
			if !inv[msg] {
				t.Errorf("%s (%s) is sent by owners but has no row in PROTOCOL.md's release inventory", msg, f.Name())
			}
		}
	}
	if owners < 5 {
		t.Fatalf("only %d owner messages found; the parser is broken", owners)
	}
}

// inventoryWire returns the message names in the inventory table's wire
// column (backquoted, optionally prefixed "PFDS ").
func inventoryWire(t *testing.T, spec string) map[string]bool {
	_, rest, ok := strings.Cut(spec, "## Releases: what leaves an owner")
	if !ok {
		t.Fatal("PROTOCOL.md has no release inventory section")
	}
	out := map[string]bool{}
	name := regexp.MustCompile("(PFDS )?`(\\w+)`")
	for _, l := range strings.Split(rest, "\n") {
		if strings.HasPrefix(l, "## ") || strings.HasPrefix(l, "### ") {
			break
		}
		cols := strings.Split(l, "|")
		if len(cols) < 4 {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(cols[2], -1) {
			out[m[1]+m[2]] = true
		}
	}
	if len(out) == 0 {
		t.Fatal("the release inventory's wire column is empty")
	}
	return out
}

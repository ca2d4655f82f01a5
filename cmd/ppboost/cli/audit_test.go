package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuditFlags(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		flag string
	}{
		"draws":      {[]string{"audit", "--draws", "2"}, "--draws"},
		"confidence": {[]string{"audit", "--confidence", "1"}, "--confidence"},
		"only":       {[]string{"audit", "--only", "nosuch"}, "--only"},
		"not a num":  {[]string{"audit", "--draws", "many"}, "-draws"},
	} {
		code, _, errOut := run(c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.flag) {
			t.Errorf("%s: exit %d, stderr %q; want %d naming %s", name, code, errOut, exitUsage, c.flag)
		}
	}
}

func TestAuditSmall(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := run("audit", "--only", "ldp/duchi/d=1", "--draws", "20000", "--out", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if !strings.Contains(out, "ldp/duchi/d=1/eps=1") || !strings.Contains(out, "pass") {
		t.Errorf("table: %s", out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "audit.json"))
	if err != nil {
		t.Fatal(err)
	}
	var reps []struct {
		Name    string  `json:"name"`
		Epsilon float64 `json:"epsilon"`
		Pass    bool    `json:"pass"`
		Caught  bool    `json:"controls_caught"`
	}
	if err := json.Unmarshal(b, &reps); err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || !reps[0].Pass || !reps[0].Caught || reps[0].Epsilon != 1 {
		t.Errorf("audit.json: %+v", reps)
	}
	if _, err := os.Stat(filepath.Join(dir, "audit.csv")); err != nil {
		t.Error(err)
	}
}

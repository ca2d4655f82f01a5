package store

import (
	"os"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// testLogger logs to the test's output on failure only.
func testLogger(t testing.TB, name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, Output: tw{t}, Level: hclog.Debug})
}

type tw struct{ t testing.TB }

func (w tw) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

func mustWrite(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // WriteFile's mode is masked by umask
		t.Fatal(err)
	}
}

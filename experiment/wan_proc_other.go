//go:build !linux

package experiment

import (
	"os/exec"
	"syscall"
)

// wanChildAttr: outside Linux a child has no process group of its own; it
// exits when its stdin ends.
func wanChildAttr() *syscall.SysProcAttr { return nil }

// wanKillGroup kills the child.
func wanKillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

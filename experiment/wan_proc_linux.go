package experiment

import (
	"os/exec"
	"syscall"
)

// wanChildAttr puts a child in its own process group (which wanKillGroup
// kills) and has the kernel kill it if the parent dies.
func wanChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// wanKillGroup kills the child's process group.
func wanKillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

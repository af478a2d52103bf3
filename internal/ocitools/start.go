package ocitools

import (
	"os/exec"
	"syscall"
)

// StartChild starts cmd in a process group of its own, set to be killed
// by the kernel when the test process exits, even without running its
// cleanups (a -timeout panic): how other test harnesses start servers.
func StartChild(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	return startWithPdeathsig(cmd)
}

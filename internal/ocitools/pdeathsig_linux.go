package ocitools

import (
	"os/exec"
	"syscall"
)

// setPdeathsig makes the kernel kill cmd when the thread that starts it
// exits.
func setPdeathsig(cmd *exec.Cmd) { cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL }

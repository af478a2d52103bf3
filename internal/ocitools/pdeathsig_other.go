//go:build !linux

package ocitools

import "os/exec"

// setPdeathsig: only Linux has PR_SET_PDEATHSIG; elsewhere a shared server
// outlives an interrupted test process.
func setPdeathsig(*exec.Cmd) {}

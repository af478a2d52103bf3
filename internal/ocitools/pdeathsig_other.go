//go:build !linux

package ocitools

import "os/exec"

// setPdeathsig: only Linux has PR_SET_PDEATHSIG; elsewhere a test's server
// outlives an interrupted test process.
func setPdeathsig(*exec.Cmd) {}

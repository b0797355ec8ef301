//go:build !linux

package proc

import "syscall"

// sysProcAttr puts the server in its own process group, so that a Ctrl-C
// meant for the harness does not reach it before the harness has stopped
// it in order.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

package proc

import "syscall"

// sysProcAttr puts the server in its own process group, so that a Ctrl-C
// meant for the harness does not reach it before the harness has stopped
// it in order, and has the kernel kill it if the harness dies first, so
// that no benchmark server outlives its run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

package integration_test

import "syscall"

// procAttr has the kernel kill a server when the test process dies (a test
// binary killed by its timeout runs no cleanup).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

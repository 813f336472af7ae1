package miniotest

import "syscall"

// sysProcAttr has the kernel kill the server if the test process dies
// without running its cleanups (a crash, a `go test -timeout` kill), so no
// MinIO outlives its test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

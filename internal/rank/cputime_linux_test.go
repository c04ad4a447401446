package rank

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU returns the CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), so that a
// benchmark on a busy machine can report the cost of a call apart from time spent waiting
// for a CPU. The caller must hold its OS thread (runtime.LockOSThread).
func threadCPU() time.Duration {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

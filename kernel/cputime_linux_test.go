package kernel

import (
	"syscall"
	"unsafe"
)

// processCPUSeconds returns the CPU time consumed by the process (all
// threads). On a shared, noisy machine flops per CPU-second × workers is a
// steadier figure than wall-clock GFLOP/s.
func processCPUSeconds() float64 {
	var ts syscall.Timespec
	const clockProcessCPUTimeID = 2
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockProcessCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return float64(ts.Sec) + float64(ts.Nsec)*1e-9
}

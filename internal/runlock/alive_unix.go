//go:build unix

package runlock

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with this pid exists on this host (signal 0 probes without sending).
// EPERM means it exists but belongs to another user.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

//go:build unix

package runlock

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// processAlive reports whether a process with this pid exists on this host (signal 0 probes without sending).
// EPERM means it exists but belongs to another user. A zombie (exited, not yet reaped by its parent) answers
// signal 0 but holds nothing: where /proc says so (Linux: state Z or X), it is dead.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !zombie(pid)
}

// zombie reports whether /proc/PID/stat gives the process's state as Z (zombie) or X (dead); false where
// there is no /proc. The state follows the command name's closing parenthesis, which may itself hold spaces.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

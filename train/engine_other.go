//go:build !linux

package train

import "os/exec"

// dieWithParent: outside Linux there is no parent-death signal; the trainer's lock watch (--lock-held: it
// stops when the lock no longer names its parent) is the guard.
func dieWithParent(cmd *exec.Cmd) {}

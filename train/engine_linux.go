package train

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel SIGKILL the trainer when this process dies, however it dies (a kill -9 of the
// study included), so that no orphan goes on writing into a run whose lock is gone.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

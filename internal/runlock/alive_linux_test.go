//go:build linux

package runlock

import (
	"os/exec"
	"testing"
	"time"
)

// TestZombieIsDead (issue 48, Found "Panics and vague errors"): a lock holder that exited but was not reaped
// by its parent (a zombie) answers signal 0; it holds nothing, so its lock is stale. Before, it counted as
// alive and its run could not be taken over until the heartbeat aged out.
func TestZombieIsDead(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a child to leave as a zombie: %v", err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); !zombie(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d did not become a zombie within 10 s", pid)
		}
	}
	if processAlive(pid) {
		t.Errorf("zombie %d counted as alive", pid)
	}
}

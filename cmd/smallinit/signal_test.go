package main

import (
	"syscall"
	"testing"
	"time"
)

// TestInterruptibleStopsOnSIGINTAndSIGTERM sends each stop signal to this process and checks that the context of
// a long command is cancelled by it (the process is not killed, since the context has taken the signal).
func TestInterruptibleStopsOnSIGINTAndSIGTERM(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		ctx, stop := interruptible()
		if err := syscall.Kill(syscall.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Errorf("%v: context not cancelled", sig)
		}
		stop()
	}
}

package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// stopSignals are the signals that stop a long command cleanly: Ctrl-C (SIGINT) at a terminal and SIGTERM, which
// Slurm and Kubernetes send before they kill a job.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// interruptible is the context every long command runs under: it is cancelled by the first SIGINT or SIGTERM, so
// that the command stops at its next checkpoint or leaves nothing half-written behind. stop releases the signals.
func interruptible() (ctx context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(context.Background(), stopSignals...)
}

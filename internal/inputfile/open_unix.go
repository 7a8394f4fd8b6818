//go:build unix

package inputfile

import (
	"os"
	"syscall"
)

// openNonblocking opens path with O_NONBLOCK, so that a path replaced by a FIFO after the first stat does not
// block the open; reads of a regular file are unaffected by the flag.
func openNonblocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// openAppendNonblocking opens path for appending with O_NONBLOCK: the open of a FIFO without a reader fails
// (ENXIO) instead of blocking; writes to a regular file are unaffected by the flag.
func openAppendNonblocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
}

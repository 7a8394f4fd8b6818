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

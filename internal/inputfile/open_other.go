//go:build !unix

package inputfile

import "os"

func openNonblocking(path string) (*os.File, error) { return os.Open(path) }

func openAppendNonblocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
}

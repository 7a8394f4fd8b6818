//go:build !unix

package inputfile

import "os"

func openNonblocking(path string) (*os.File, error) { return os.Open(path) }

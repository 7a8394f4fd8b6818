//go:build !amd64

package kernel

// available lists the implementations this CPU can run, best first.
func available() []*impl { return []*impl{genericImpl} }

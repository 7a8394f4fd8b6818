// Package allocs measures how many bytes a call allocates, for the fuzz targets' bounded-allocation checks.
package allocs

import "runtime"

// Bytes returns the bytes allocated (growth of runtime.MemStats.TotalAlloc) while fn runs. A fuzz worker runs
// one input at a time, so this is fn's allocation plus a little noise from the fuzzing engine.
func Bytes(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

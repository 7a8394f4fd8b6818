//go:build !amd64

package kernel

// availablePeakLoops: no vector loops off amd64; MeasurePeak says so.
func availablePeakLoops() []peakLoop { return nil }

//go:build !linux

package kernel

func processCPUSeconds() float64 { return 0 }

//go:build !amd64

package kernel

func fmaPeakAVX512Wrapper(iters int) {}
func fmaPeakAVX2Wrapper(iters int)   {}

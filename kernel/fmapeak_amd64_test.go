package kernel

func fmaPeakAVX512Wrapper(iters int) { fmaPeakAVX512(iters) }
func fmaPeakAVX2Wrapper(iters int)   { fmaPeakAVX2(iters) }

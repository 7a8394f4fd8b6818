"""Go's math/rand/v2 PCG generator and Rand.IntN, bit for bit, so that Python draws the same window order as
smallinit's sampler (train/sampler.go) and the same row subsample as its diagnostics (diag.sampleRows)."""

_M64 = (1 << 64) - 1
_MUL = (2549297995355413924 << 64) | 4865540595714422341
_INC = (6364136223846793005 << 64) | 1442695040888963407
_M128 = (1 << 128) - 1


class PCG:
    """rand.NewPCG(seed1, seed2): a 128-bit LCG (state hi = seed1, lo = seed2) with the DXSM output function."""

    def __init__(self, seed1, seed2):
        self.state = ((seed1 & _M64) << 64) | (seed2 & _M64)

    def uint64(self):
        self.state = (self.state * _MUL + _INC) & _M128
        hi, lo = self.state >> 64, self.state & _M64
        hi ^= hi >> 32
        hi = (hi * 0xda942042e4dd58b5) & _M64
        hi ^= hi >> 48
        return (hi * (lo | 1)) & _M64

    def intn(self, n):
        """Rand.IntN(n) on a 64-bit platform (Lemire's multiply-shift with rejection)."""
        if n <= 0:
            raise ValueError("invalid argument to IntN")
        if n & (n - 1) == 0:
            return self.uint64() & (n - 1)
        prod = self.uint64() * n
        hi, lo = prod >> 64, prod & _M64
        if lo < n:
            thresh = (-n & _M64) % n
            while lo < thresh:
                prod = self.uint64() * n
                hi, lo = prod >> 64, prod & _M64
        return hi

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


_M32 = (1 << 32) - 1
_DXSM = 0xda942042e4dd58b5


def _mulhi(a, b):
    """The high 64 bits of a * b for uint64 numpy arrays (or an array and a scalar), by 32-bit halves."""
    import numpy as np
    m32, s32 = np.uint64(_M32), np.uint64(32)
    a0, a1, b0, b1 = a & m32, a >> s32, b & m32, b >> s32
    t = a0 * b0
    t = a1 * b0 + (t >> s32)
    w1, w2 = t & m32, t >> s32
    t = a0 * b1 + w1
    return a1 * b1 + w2 + (t >> s32)


def fisher_yates(n: int, seed1: int, seed2: int, lanes: int = 4096):
    """The permutation of range(n) that Go's train.Sampler draws (perm[i] = i, then for i = n-1 .. 1 swap i with
    PCG(seed1, seed2).IntN(i + 1)), as an array('i') of 4 bytes a window, not a list (28 + 8 bytes an entry). The
    PCG stream is computed `lanes` draws at a time with numpy: each lane jumps ahead by lanes steps of the LCG
    (state' = A state + C mod 2^128, A and C the composition of lanes steps), and Lemire's bounded draw is
    vectorised; a rejected draw (probability about n / 2^64 per draw) makes the whole permutation fall back to the
    sequential PCG.intn, so the result is Go's whatever happens. The swaps themselves are a loop over the array."""
    import array
    import numpy as np
    perm = array.array("i", range(n)) if n < (1 << 31) else None
    if perm is None:
        raise ValueError(f"{n} windows: more than a 32-bit index holds")
    if n < 2:
        return perm
    rng = PCG(seed1, seed2)
    st, states = rng.state, []
    for _ in range(lanes):  # lane k holds the state of draw k of the block
        st = (st * _MUL + _INC) & _M128
        states.append(st)
    a, c = 1, 0
    for _ in range(lanes):
        a, c = (a * _MUL) & _M128, (c * _MUL + _INC) & _M128
    a_hi, a_lo, c_hi, c_lo = (np.uint64(v) for v in (a >> 64, a & _M64, c >> 64, c & _M64))
    hi = np.array([s >> 64 for s in states], dtype=np.uint64)
    lo = np.array([s & _M64 for s in states], dtype=np.uint64)
    s32, s48, dx = np.uint64(32), np.uint64(48), np.uint64(_DXSM)
    one = np.uint64(1)
    i = n - 1  # the next swap's index: draw t is IntN(n - t) for i = n - 1 - t
    with np.errstate(over="ignore"):
        while i > 0:
            h = hi ^ (hi >> s32)
            h = h * dx
            h = h ^ (h >> s48)
            x = h * (lo | one)
            k = min(lanes, i)
            bound = np.arange(i + 1, i + 1 - k, -1, dtype=np.uint64)  # n of each draw: i + 1, i, ...
            x = x[:k]
            pow2 = (bound & (bound - one)) == 0
            ph, pl = _mulhi(x, bound), x * bound
            reject = ~pow2 & (pl < bound) & (pl < ((np.uint64(0) - bound) % bound))
            if reject.any():
                return _fisher_yates_sequential(n, seed1, seed2)
            js = np.where(pow2, x & (bound - one), ph).astype(np.int64).tolist()
            for j in js:
                perm[i], perm[j] = perm[j], perm[i]
                i -= 1
            # every lane jumps ahead by lanes draws: state = A state + C (mod 2^128)
            nlo = lo * a_lo
            nhi = _mulhi(lo, a_lo) + lo * a_hi + hi * a_lo
            lo = nlo + c_lo
            hi = nhi + c_hi + (lo < nlo).astype(np.uint64)
    return perm


def _fisher_yates_sequential(n: int, seed1: int, seed2: int):
    """fisher_yates one draw at a time (its fallback, and the reference its test compares with)."""
    import array
    perm = array.array("i", range(n))
    rng = PCG(seed1, seed2)
    for i in range(n - 1, 0, -1):
        j = rng.intn(i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return perm

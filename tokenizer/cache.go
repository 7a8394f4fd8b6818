package tokenizer

// wordCache remembers the ids of pre-tokens already encoded. Encoding speed depends mostly on this cache: the
// default corpus has about 150,000 distinct pre-tokens, so lookups miss the CPU caches and cost a memory access
// each. Pre-tokens of at most 15 bytes that encode to at most 3 ids (nearly all pre-tokens of the default
// corpus) live in an open-addressing table of 24-byte entries, key and ids packed in place, so that a lookup
// touches one or two cache lines; the others live in an ordinary map.
type wordCache struct {
	short  []shortEntry // power-of-two size, linear probing; k1 == 0 marks an empty entry
	nShort int
	long   map[string][]int32
}

// shortEntry holds a pre-token's bytes in k0 (bytes 0-7) and k1 (bytes 8-14, and the length in the top byte,
// so k1 is never 0), and its ids in val: the count in the top 2 bits, then up to 3 ids of 20 bits.
type shortEntry struct{ k0, k1, val uint64 }

const (
	maxShortWord = 15
	shortIDBits  = 20
	shortIDMax   = 1<<shortIDBits - 1
)

func newWordCache() *wordCache {
	return &wordCache{short: make([]shortEntry, 1024), long: make(map[string][]int32)}
}

// shortKey packs a pre-token of 2 to 15 bytes with its length.
func shortKey(w string) (k0, k1 uint64) {
	k1 = uint64(len(w)) << 56
	for i := 0; i < len(w); i++ {
		if i < 8 {
			k0 |= uint64(w[i]) << (8 * i)
		} else {
			k1 |= uint64(w[i]) << (8 * (i - 8))
		}
	}
	return k0, k1
}

func (c *wordCache) slot(k0, k1 uint64) int {
	h := (k0 ^ (k1 * 0xC2B2AE3D27D4EB4F)) * 0x9E3779B97F4A7C15
	return int(h >> 32 & uint64(len(c.short)-1))
}

// appendShort appends the cached ids of key (k0, k1) to dst; ok is false if the key is not cached.
func (c *wordCache) appendShort(dst []int32, k0, k1 uint64) ([]int32, bool) {
	mask := len(c.short) - 1
	for i := c.slot(k0, k1); ; i = (i + 1) & mask {
		e := &c.short[i]
		if e.k1 == k1 && e.k0 == k0 {
			v := e.val
			for n := int(v >> 62); n > 0; n-- {
				dst = append(dst, int32(v&shortIDMax))
				v >>= shortIDBits
			}
			return dst, true
		}
		if e.k1 == 0 {
			return dst, false
		}
	}
}

// putShort caches ids under key (k0, k1) if they fit a short entry.
func (c *wordCache) putShort(k0, k1 uint64, ids []int32) bool {
	if len(ids) > 3 {
		return false
	}
	v := uint64(len(ids)) << 62
	for i, id := range ids {
		if id > shortIDMax {
			return false
		}
		v |= uint64(id) << (shortIDBits * i)
	}
	if 2*(c.nShort+1) > len(c.short) { // keep the load factor at most 1/2
		old := c.short
		c.short = make([]shortEntry, 2*len(old))
		for _, e := range old {
			if e.k1 != 0 {
				c.insert(e)
			}
		}
	}
	c.insert(shortEntry{k0, k1, v})
	c.nShort++
	return true
}

func (c *wordCache) insert(e shortEntry) {
	mask := len(c.short) - 1
	i := c.slot(e.k0, e.k1)
	for c.short[i].k1 != 0 {
		i = (i + 1) & mask
	}
	c.short[i] = e
}

func (c *wordCache) size() int { return c.nShort + len(c.long) }

func (c *wordCache) reset() {
	clear(c.short)
	c.nShort = 0
	clear(c.long)
}
